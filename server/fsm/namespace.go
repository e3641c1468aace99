package fsm

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// Snapshot records of namespaces and quota specifications. They are
// numbered apart from the records in snapshot.go and schedconfig.go so
// that records added there in the meantime do not collide; never
// renumber.
const (
	namespaceRecord recordType = 24
	quotaRecord     recordType = 25
)

// applyNamespaceUpsert stores namespaces. A namespace may have gained or
// changed its quota, so blocked evaluations are retried (a capacity
// change): one held back by the old quota may fit the new one.
func (f *FSM) applyNamespaceUpsert(buf []byte, index uint64) any {
	var req structs.NamespaceUpsertRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode namespace upsert: %w", err)
	}
	if err := f.State().UpsertNamespaces(index, req.Namespaces); err != nil {
		return err
	}
	f.capacityChanged(index)
	return nil
}

func (f *FSM) applyNamespaceDelete(buf []byte, index uint64) any {
	var req structs.NamespaceDeleteRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode namespace delete: %w", err)
	}
	return f.State().DeleteNamespaces(index, req.Namespaces)
}

// applyQuotaUpsert stores quota specifications and retries blocked
// evaluations, which a raised quota may now admit.
func (f *FSM) applyQuotaUpsert(buf []byte, index uint64) any {
	var req structs.QuotaSpecUpsertRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode quota upsert: %w", err)
	}
	if err := f.State().UpsertQuotaSpecs(index, req.Quotas); err != nil {
		return err
	}
	f.capacityChanged(index)
	return nil
}

func (f *FSM) applyQuotaDelete(buf []byte, index uint64) any {
	var req structs.QuotaSpecDeleteRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode quota delete: %w", err)
	}
	return f.State().DeleteQuotaSpecs(index, req.Names)
}

// persistNamespaces writes the stored namespaces (the built-in default
// one is not stored, so it is not written either) and quotas.
func (s *fsmSnapshot) persistNamespaces(rec func(recordType, any) error) error {
	quotas, err := s.snap.QuotaSpecs(nil, "")
	if err != nil {
		return err
	}
	if err := writeAll(rec, quotaRecord, quotas); err != nil {
		return err
	}
	namespaces, err := s.snap.Namespaces(nil, "")
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		if ns.CreateIndex == 0 {
			continue // the built-in default namespace
		}
		if err := rec(namespaceRecord, ns); err != nil {
			return fmt.Errorf("namespace %q: %w", ns.Name, err)
		}
	}
	return nil
}

// restoreNamespaceRecord decodes a namespace or quota record.
func restoreNamespaceRecord(r *state.StateRestore, dec *codec.Decoder, t recordType) error {
	if t == quotaRecord {
		var q structs.QuotaSpec
		if err := dec.Decode(&q); err != nil {
			return fmt.Errorf("quota: %w", err)
		}
		return r.QuotaSpecRestore(&q)
	}
	var ns structs.Namespace
	if err := dec.Decode(&ns); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	return r.NamespaceRestore(&ns)
}
