package fsm

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// Snapshot records of variables (sealed) and root key metadata. Numbered
// apart from the other records' ranges; never renumber.
const (
	variableRecord    recordType = 90
	rootKeyMetaRecord recordType = 91
)

// applyVariableUpsert stores a sealed variable; a lost check-and-set is
// the entry's result (an error wrapping structs.ErrConflict).
func (f *FSM) applyVariableUpsert(buf []byte, index uint64) any {
	var req structs.VariableUpsertEntry
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode variable upsert: %w", err)
	}
	return f.State().UpsertVariable(index, req.Var, req.CheckIndex)
}

func (f *FSM) applyVariableDelete(buf []byte, index uint64) any {
	var req structs.VariableDeleteEntry
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode variable delete: %w", err)
	}
	return f.State().DeleteVariable(index, req.Namespace, req.Path, req.CheckIndex)
}

func (f *FSM) applyRootKeyMetaUpsert(buf []byte, index uint64) any {
	var req structs.RootKeyMetaUpsertRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode root key upsert: %w", err)
	}
	return f.State().UpsertRootKeyMeta(index, req.Meta, req.Deactivate...)
}

// persistVariables writes the sealed variables and the root keys'
// metadata: never a key, never an item in the clear.
func (s *fsmSnapshot) persistVariables(rec func(recordType, any) error) error {
	metas, err := s.snap.RootKeyMetas(nil)
	if err != nil {
		return err
	}
	if err := writeAll(rec, rootKeyMetaRecord, metas); err != nil {
		return err
	}
	vars, err := s.snap.Variables(nil, "*", "")
	if err != nil {
		return err
	}
	return writeAll(rec, variableRecord, vars)
}

func restoreVariableRecord(r *state.StateRestore, dec *codec.Decoder, t recordType) error {
	if t == rootKeyMetaRecord {
		var m structs.RootKeyMeta
		if err := dec.Decode(&m); err != nil {
			return fmt.Errorf("root key: %w", err)
		}
		return r.RootKeyMetaRestore(&m)
	}
	var v structs.VariableEncrypted
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("variable: %w", err)
	}
	return r.VariableRestore(&v)
}
