package state

import (
	"cmp"
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// TableJobVersions holds the last structs.JobTrackedVersions specs of
// each job, keyed by namespace, job ID and version. A row is the same
// *Job the jobs table stored for that version (never mutated; a change
// of stability inserts a copy).
const TableJobVersions = "job_versions"

func jobVersionsTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableJobVersions, Indexes: map[string]*memdb.IndexSchema{
		indexID: {
			Name:   indexID,
			Unique: true,
			Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "ID"},
				&memdb.UintFieldIndex{Field: "Version"},
			}},
		},
		indexJob: namespacedIndex(indexJob, "ID", false),
	}}
}

// JobVersions returns the stored versions of a job, newest first.
func (s *StateStore) JobVersions(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Job, error) {
	return jobVersionsTxn(ws, s.db.Txn(false), namespace, jobID)
}

// JobByIDAndVersion returns one stored version of a job, or nil.
func (s *StateStore) JobByIDAndVersion(ws memdb.WatchSet, namespace, jobID string, version uint64) (*structs.Job, error) {
	return first[*structs.Job](ws, s.db.Txn(false), TableJobVersions, indexID, namespaceOf(namespace), jobID, version)
}

func jobVersionsTxn(ws memdb.WatchSet, txn *memdb.Txn, namespace, jobID string) ([]*structs.Job, error) {
	iter, err := txn.Get(TableJobVersions, indexJob, namespaceOf(namespace), jobID)
	if err != nil {
		return nil, fmt.Errorf("list versions of job %q: %w", jobID, err)
	}
	return collect(ws, iter, nil, func(a, b *structs.Job) int { return cmp.Compare(b.Version, a.Version) }), nil
}

// storeJobVersion records j, a job as just stored with a new version,
// and drops the oldest versions beyond structs.JobTrackedVersions.
func storeJobVersion(txn *memdb.Txn, index uint64, j *structs.Job) error {
	if err := txn.Insert(TableJobVersions, j); err != nil {
		return fmt.Errorf("store version %d of job %q: %w", j.Version, j.ID, err)
	}
	all, err := jobVersionsTxn(nil, txn, j.Namespace, j.ID)
	if err != nil {
		return err
	}
	for i := structs.JobTrackedVersions; i < len(all); i++ {
		if err := txn.Delete(TableJobVersions, all[i]); err != nil {
			return fmt.Errorf("drop version %d of job %q: %w", all[i].Version, j.ID, err)
		}
	}
	return setIndex(txn, TableJobVersions, index)
}

// deleteJobVersions drops every stored version of a job (on purge).
func deleteJobVersions(txn *memdb.Txn, index uint64, namespace, jobID string) error {
	if _, err := txn.DeleteAll(TableJobVersions, indexJob, namespaceOf(namespace), jobID); err != nil {
		return fmt.Errorf("drop versions of job %q: %w", jobID, err)
	}
	return setIndex(txn, TableJobVersions, index)
}

// UpdateJobStability sets the Stable flag of one stored version of a job
// (and of the job itself when it is that version). An unknown version
// is structs.ErrNotFound.
func (tx *Txn) UpdateJobStability(namespace, jobID string, version uint64, stable bool) error {
	ns := namespaceOf(namespace)
	v, err := first[*structs.Job](nil, tx.txn, TableJobVersions, indexID, ns, jobID, version)
	if err != nil {
		return err
	}
	if v == nil {
		return structs.KindErrorf(structs.ErrNotFound, "job %q has no version %d", jobID, version)
	}
	if v.Stable != stable {
		c := v.Copy()
		c.Stable = stable
		if err := tx.txn.Insert(TableJobVersions, c); err != nil {
			return fmt.Errorf("set stability of job %q: %w", jobID, err)
		}
		if err := setIndex(tx.txn, TableJobVersions, tx.index); err != nil {
			return err
		}
	}
	cur, err := tx.JobByID(ns, jobID)
	if err != nil || cur == nil || cur.Version != version || cur.Stable == stable {
		return err
	}
	c := cur.Copy()
	c.Stable = stable
	c.ModifyIndex = tx.index
	if err := tx.txn.Insert(TableJobs, c); err != nil {
		return fmt.Errorf("set stability of job %q: %w", jobID, err)
	}
	return setIndex(tx.txn, TableJobs, tx.index)
}

// JobVersionRestore inserts a stored job version; it shares the *Job
// restored for the same version, if any.
func (r *StateRestore) JobVersionRestore(job *structs.Job) error {
	key := versionOf(job)
	if shared, ok := r.jobs[key]; ok && shared.Stable == job.Stable {
		job = shared
	} else {
		r.jobs[key] = job
	}
	return r.insert(TableJobVersions, job.ID, job)
}

// AllJobVersions returns every stored job version (for snapshots).
func (s *StateStore) AllJobVersions() ([]*structs.Job, error) {
	iter, err := s.db.Txn(false).Get(TableJobVersions, indexID)
	if err != nil {
		return nil, fmt.Errorf("list job versions: %w", err)
	}
	var out []*structs.Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Job))
	}
	return out, nil
}
