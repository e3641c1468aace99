package state

import (
	"fmt"
	"reflect"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// jobKey names a job across namespaces.
type jobKey struct{ namespace, id string }

// namespaceOf returns ns, or the default namespace when ns is empty.
func namespaceOf(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}

// UpsertJob registers or updates a job at index. The Version goes up and
// JobModifyIndex becomes index only when the spec changed; the job's
// Status is computed, not taken from the caller; SubmitTime is the
// caller's.
func (s *StateStore) UpsertJob(index uint64, job *structs.Job) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertJob(job) })
}

func upsertJobTxn(txn *memdb.Txn, index uint64, job *structs.Job) error {
	if job == nil || job.ID == "" {
		return fmt.Errorf("upsert job: missing ID: %w", structs.ErrInvalid)
	}
	if err := job.CheckShape(); err != nil {
		return fmt.Errorf("upsert job: %w", err)
	}
	j := job.Copy()
	j.Namespace = namespaceOf(j.Namespace)
	existing, err := first[*structs.Job](nil, txn, TableJobs, indexID, j.Namespace, j.ID)
	if err != nil {
		return err
	}
	j.ModifyIndex = index
	newVersion := true
	switch {
	case existing == nil:
		j.CreateIndex, j.JobModifyIndex, j.Version, j.Stable = index, index, 0, false
	case specEqual(existing, j):
		j.CreateIndex, j.JobModifyIndex, j.Version = existing.CreateIndex, existing.JobModifyIndex, existing.Version
		j.Stable, newVersion = existing.Stable, false
	default:
		j.CreateIndex, j.JobModifyIndex, j.Version, j.Stable = existing.CreateIndex, index, existing.Version+1, false
	}
	if j.Status, err = jobStatus(txn, j); err != nil {
		return err
	}
	if err := txn.Insert(TableJobs, j); err != nil {
		return fmt.Errorf("upsert job %q: %w", j.ID, err)
	}
	if err := queueJobChanged(txn, existing, j); err != nil { // queue_usage.go
		return err
	}
	if newVersion {
		if err := storeJobVersion(txn, index, j); err != nil { // job_versions.go
			return err
		}
	}
	return setIndex(txn, TableJobs, index)
}

// specEqual reports whether two jobs have the same spec: they differ at
// most in what the servers maintain (status, version, indexes) and the
// submit time (and its stability).
func specEqual(a, b *structs.Job) bool {
	strip := func(j *structs.Job) structs.Job {
		c := *j
		c.Status, c.StatusDescription, c.Version, c.SubmitTime, c.Stable = "", "", 0, 0, false
		c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
		return c
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// DeleteJob removes a job (purge). Its evaluations and allocations stay,
// for the scheduler to stop and the garbage collector to reap. Deleting
// an absent job does nothing.
func (s *StateStore) DeleteJob(index uint64, namespace, jobID string) error {
	return s.Write(index, func(tx *Txn) error { return tx.DeleteJob(namespace, jobID) })
}

// JobByID returns the job, or nil. An empty namespace is the default one.
func (s *StateStore) JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	return first[*structs.Job](ws, s.db.Txn(false), TableJobs, indexID, namespaceOf(namespace), id)
}

// Jobs returns the jobs of namespace ("" or "*" for all), sorted by ID.
func (s *StateStore) Jobs(ws memdb.WatchSet, namespace string) ([]*structs.Job, error) {
	return s.JobsByIDPrefix(ws, namespace, "")
}

// JobsByIDPrefix returns the jobs of namespace ("" or "*" for all) whose
// ID starts with prefix, sorted by ID.
func (s *StateStore) JobsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) ([]*structs.Job, error) {
	txn := s.db.Txn(false)
	var (
		iter memdb.ResultIterator
		err  error
	)
	if allNamespaces(namespace) {
		iter, err = txn.Get(TableJobs, indexID)
	} else {
		iter, err = txn.Get(TableJobs, indexID+"_prefix", namespace, prefix)
	}
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	keep := func(j *structs.Job) bool { return hasPrefix(j.ID, prefix) }
	return collect(ws, iter, keep, func(a, b *structs.Job) int {
		return byIDThenNamespace(a.ID, a.Namespace, b.ID, b.Namespace)
	}), nil
}

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// jobStatus derives a job's status from its allocations and evaluations:
// dead when it is stopped and nothing of it still runs, or when it is a
// batch job whose allocations have all finished and that has no
// evaluation outstanding; running while any allocation runs; pending
// otherwise.
func jobStatus(txn *memdb.Txn, job *structs.Job) (string, error) {
	if job.IsParent() { // Nomad's: a periodic or parameterized parent runs until stopped
		if job.Stop {
			return structs.JobStatusDead, nil
		}
		return structs.JobStatusRunning, nil
	}
	allocs, err := txn.Get(TableAllocs, indexJob, job.Namespace, job.ID)
	if err != nil {
		return "", fmt.Errorf("allocs of job %q: %w", job.ID, err)
	}
	hasAlloc, live := false, false
	for raw := allocs.Next(); raw != nil; raw = allocs.Next() {
		hasAlloc = true
		if !raw.(*structs.Allocation).TerminalStatus() {
			live = true
		}
	}
	switch {
	case job.Stop && !live:
		return structs.JobStatusDead, nil
	case live:
		return structs.JobStatusRunning, nil
	case !hasAlloc || !isBatch(job):
		return structs.JobStatusPending, nil
	}
	evals, err := txn.Get(TableEvals, indexJob, job.Namespace, job.ID)
	if err != nil {
		return "", fmt.Errorf("evals of job %q: %w", job.ID, err)
	}
	for raw := evals.Next(); raw != nil; raw = evals.Next() {
		if !raw.(*structs.Evaluation).TerminalStatus() {
			return structs.JobStatusPending, nil
		}
	}
	return structs.JobStatusDead, nil
}

func isBatch(job *structs.Job) bool {
	return job.Type == structs.JobTypeBatch || job.Type == structs.JobTypeSysBatch
}

// refreshJobStatuses recomputes the status of each job in keys and
// re-inserts (a copy of) those whose status changed.
func refreshJobStatuses(txn *memdb.Txn, index uint64, keys map[jobKey]struct{}) error {
	changed := false
	for k := range keys {
		job, err := first[*structs.Job](nil, txn, TableJobs, indexID, k.namespace, k.id)
		if err != nil {
			return err
		}
		if job == nil {
			continue
		}
		status, err := jobStatus(txn, job)
		if err != nil {
			return err
		}
		if status == job.Status {
			continue
		}
		// A shallow copy: the stored job is never changed in place, so
		// the new row may share everything but its status.
		c := *job
		j := &c
		j.Status = status
		j.ModifyIndex = index
		if err := txn.Insert(TableJobs, j); err != nil {
			return fmt.Errorf("update status of job %q: %w", j.ID, err)
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return setIndex(txn, TableJobs, index)
}
