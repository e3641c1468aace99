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
	// jobs are the job versions restored so far, so that allocations of
	// the same version share one *Job, as they do when a plan placed
	// them: a snapshot holds one copy per allocation, and a job of
	// 1 MB with a count of 1,000 would otherwise take 1 GB after restore.
	jobs map[jobVersion]*structs.Job
}

// jobVersion identifies one stored version of a job, exactly.
type jobVersion struct {
	namespace, id              string
	version, modify, jobModify uint64
}

func versionOf(j *structs.Job) jobVersion {
	return jobVersion{j.Namespace, j.ID, j.Version, j.ModifyIndex, j.JobModifyIndex}
}

// Restore starts a restore. The store accepts no other write until Commit
// or Abort.
func (s *StateStore) Restore() (*StateRestore, error) {
	return &StateRestore{txn: s.db.Txn(true), jobs: map[jobVersion]*structs.Job{}}, nil
}

// NodeRestore inserts a node.
func (r *StateRestore) NodeRestore(node *structs.Node) error {
	return r.insert(TableNodes, node.ID, node)
}

// JobRestore inserts a job.
func (r *StateRestore) JobRestore(job *structs.Job) error {
	r.jobs[versionOf(job)] = job
	return r.insert(TableJobs, job.ID, job)
}

// EvalRestore inserts an evaluation.
func (r *StateRestore) EvalRestore(eval *structs.Evaluation) error {
	return r.insert(TableEvals, eval.ID, eval)
}

// AllocRestore inserts an allocation. Its job becomes the one already
// restored for the same job version, if any.
func (r *StateRestore) AllocRestore(alloc *structs.Allocation) error {
	if alloc.Job != nil {
		key := versionOf(alloc.Job)
		if shared, ok := r.jobs[key]; ok {
			alloc.Job = shared
		} else {
			r.jobs[key] = alloc.Job
		}
	}
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
