package fsm

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// Snapshot records of ACL policies and tokens. Numbered apart from the
// other records' ranges; never renumber.
const (
	aclPolicyRecord recordType = 50
	aclTokenRecord  recordType = 51
)

func (f *FSM) applyACLPolicyUpsert(buf []byte, index uint64) any {
	var req structs.ACLPolicyUpsertRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode ACL policy upsert: %w", err)
	}
	return f.State().UpsertACLPolicies(index, req.Policies)
}

func (f *FSM) applyACLPolicyDelete(buf []byte, index uint64) any {
	var req structs.ACLPolicyDeleteRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode ACL policy delete: %w", err)
	}
	return f.State().DeleteACLPolicies(index, req.Names)
}

func (f *FSM) applyACLTokenUpsert(buf []byte, index uint64) any {
	var req structs.ACLTokenUpsertRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode ACL token upsert: %w", err)
	}
	return f.State().UpsertACLTokens(index, req.Tokens)
}

func (f *FSM) applyACLTokenDelete(buf []byte, index uint64) any {
	var req structs.ACLTokenDeleteRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode ACL token delete: %w", err)
	}
	return f.State().DeleteACLTokens(index, req.AccessorIDs)
}

// applyACLBootstrap stores the first management token; the state store
// refuses a second bootstrap, so two racing ones cannot both win.
func (f *FSM) applyACLBootstrap(buf []byte, index uint64) any {
	var req structs.ACLTokenBootstrapRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode ACL bootstrap: %w", err)
	}
	return f.State().BootstrapACLToken(index, req.ResetIndex, req.Token)
}

func (s *fsmSnapshot) persistACL(rec func(recordType, any) error) error {
	policies, err := s.snap.ACLPolicies(nil, "")
	if err != nil {
		return err
	}
	if err := writeAll(rec, aclPolicyRecord, policies); err != nil {
		return err
	}
	tokens, err := s.snap.ACLTokens(nil, "")
	if err != nil {
		return err
	}
	return writeAll(rec, aclTokenRecord, tokens)
}

func restoreACLRecord(r *state.StateRestore, dec *codec.Decoder, t recordType) error {
	if t == aclPolicyRecord {
		var p structs.ACLPolicy
		if err := dec.Decode(&p); err != nil {
			return fmt.Errorf("ACL policy: %w", err)
		}
		return r.ACLPolicyRestore(&p)
	}
	var tok structs.ACLToken
	if err := dec.Decode(&tok); err != nil {
		return fmt.Errorf("ACL token: %w", err)
	}
	return r.ACLTokenRestore(&tok)
}
