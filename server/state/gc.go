package state

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// GarbageCollect deletes what req names that is still collectable (see
// structs.GarbageCollectRequest): terminal evaluations and allocations,
// jobs and down nodes still at the ModifyIndex named. Anything else is
// skipped, not an error: the state moved on since the leader looked, and
// a later collection finds it again. It returns how many objects it
// deleted.
func (tx *Txn) GarbageCollect(req *structs.GarbageCollectRequest) (int, error) {
	deleted := 0
	for _, id := range req.Allocs {
		ok, err := tx.deleteTerminalAlloc(id)
		if err != nil {
			return 0, err
		}
		if ok {
			deleted++
		}
	}
	for _, id := range req.Evals {
		ok, err := tx.deleteTerminalEval(id)
		if err != nil {
			return 0, err
		}
		if ok {
			deleted++
		}
	}
	for _, j := range req.Jobs {
		job, err := tx.JobByID(j.Namespace, j.ID)
		if err != nil {
			return 0, err
		}
		if job == nil || job.ModifyIndex != j.ModifyIndex {
			continue
		}
		if live, err := tx.hasLiveAlloc(TableAllocs, indexJob, j.Namespace, j.ID); err != nil || live {
			if err != nil {
				return 0, err
			}
			continue
		}
		if err := tx.DeleteJob(j.Namespace, j.ID); err != nil {
			return 0, err
		}
		deleted++
	}
	for _, tok := range req.ACLTokens {
		t, err := first[*structs.ACLToken](nil, tx.txn, TableACLTokens, indexID, tok.ID)
		if err != nil {
			return 0, err
		}
		if t == nil || t.ModifyIndex != tok.ModifyIndex || t.ExpirationTime == nil {
			continue
		}
		if err := tx.txn.Delete(TableACLTokens, t); err != nil {
			return 0, fmt.Errorf("delete ACL token %s: %w", t.AccessorID, err)
		}
		if err := setIndex(tx.txn, TableACLTokens, tx.index); err != nil {
			return 0, err
		}
		deleted++
	}
	for _, n := range req.Nodes {
		node, err := tx.NodeByID(n.ID)
		if err != nil {
			return 0, err
		}
		if node == nil || node.ModifyIndex != n.ModifyIndex || !node.TerminalStatus() {
			continue
		}
		if live, err := tx.hasLiveAlloc(TableAllocs, indexNode, n.ID); err != nil || live {
			if err != nil {
				return 0, err
			}
			continue
		}
		if err := tx.DeleteNode(n.ID); err != nil {
			return 0, err
		}
		deleted++
	}
	return deleted, nil
}

// hasLiveAlloc reports whether an allocation found by the index and
// args is not finished for good (structs.Allocation.Collectable).
func (tx *Txn) hasLiveAlloc(table, index string, args ...any) (bool, error) {
	iter, err := tx.txn.Get(table, index, args...)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", table, err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if !raw.(*structs.Allocation).Collectable() {
			return true, nil
		}
	}
	return false, nil
}

// deleteTerminalAlloc deletes the allocation if it is finished for good
// (the leader's test, checked again: it may have started since).
func (tx *Txn) deleteTerminalAlloc(id string) (bool, error) {
	a, err := tx.AllocByID(id)
	if err != nil || a == nil || !a.Collectable() {
		return false, err
	}
	if err := tx.txn.Delete(TableAllocs, a); err != nil {
		return false, fmt.Errorf("delete alloc %q: %w", id, err)
	}
	if err := tx.updateUsage(a, nil); err != nil {
		return false, err
	}
	tx.touch(a.Namespace, a.JobID)
	return true, setIndex(tx.txn, TableAllocs, tx.index)
}

// deleteTerminalEval deletes the evaluation if it is terminal.
func (tx *Txn) deleteTerminalEval(id string) (bool, error) {
	e, err := tx.EvalByID(id)
	if err != nil || e == nil || !e.TerminalStatus() {
		return false, err
	}
	if err := tx.txn.Delete(TableEvals, e); err != nil {
		return false, fmt.Errorf("delete eval %q: %w", id, err)
	}
	tx.touch(e.Namespace, e.JobID)
	return true, setIndex(tx.txn, TableEvals, tx.index)
}
