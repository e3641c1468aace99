package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// StateRestore loads objects into a store as they are, indexes included,
// in one transaction: nothing is visible until Commit. It is for the FSM
// restoring a snapshot into a new, empty store.
type StateRestore struct {
	txn *memdb.Txn
}

// Restore starts a restore. The store accepts no other write until Commit
// or Abort.
func (s *StateStore) Restore() (*StateRestore, error) {
	return &StateRestore{txn: s.db.Txn(true)}, nil
}

// NodeRestore inserts a node.
func (r *StateRestore) NodeRestore(node *structs.Node) error {
	return r.insert(TableNodes, node.ID, node)
}

// JobRestore inserts a job.
func (r *StateRestore) JobRestore(job *structs.Job) error {
	return r.insert(TableJobs, job.ID, job)
}

// EvalRestore inserts an evaluation.
func (r *StateRestore) EvalRestore(eval *structs.Evaluation) error {
	return r.insert(TableEvals, eval.ID, eval)
}

// AllocRestore inserts an allocation.
func (r *StateRestore) AllocRestore(alloc *structs.Allocation) error {
	return r.insert(TableAllocs, alloc.ID, alloc)
}

// IndexRestore sets the index of table.
func (r *StateRestore) IndexRestore(table string, index uint64) error {
	return r.insert(TableIndex, table, &IndexEntry{Key: table, Value: index})
}

func (r *StateRestore) insert(table, id string, obj any) error {
	if err := r.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("restore %s %q: %w", table, id, err)
	}
	return nil
}

// Commit makes everything restored visible.
func (r *StateRestore) Commit() error {
	if err := rebuildUsage(r.txn); err != nil {
		r.txn.Abort()
		return err
	}
	if err := rebuildQuotaCharges(r.txn); err != nil {
		r.txn.Abort()
		return err
	}
	if err := rebuildQueueUsage(r.txn); err != nil { // queue_usage.go
		r.txn.Abort()
		return err
	}
	r.txn.Commit()
	return nil
}

// Abort discards the restore.
func (r *StateRestore) Abort() { r.txn.Abort() }
