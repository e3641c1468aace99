package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// TablePeriodicLaunch holds each periodic parent's last launch
// (structs.PeriodicLaunch, Nomad's periodic_launch), one per job.
const TablePeriodicLaunch = "periodic_launch"

func periodicLaunchTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TablePeriodicLaunch, Indexes: map[string]*memdb.IndexSchema{
		indexID: namespacedIndex(indexID, "ID", true),
	}}
}

// PeriodicLaunchByID returns the job's last launch, or nil.
func (s *StateStore) PeriodicLaunchByID(ws memdb.WatchSet, namespace, jobID string) (*structs.PeriodicLaunch, error) {
	return first[*structs.PeriodicLaunch](ws, s.db.Txn(false), TablePeriodicLaunch, indexID, namespaceOf(namespace), jobID)
}

// PeriodicLaunches returns every stored launch.
func (s *StateStore) PeriodicLaunches() ([]*structs.PeriodicLaunch, error) {
	iter, err := s.db.Txn(false).Get(TablePeriodicLaunch, indexID)
	if err != nil {
		return nil, fmt.Errorf("read periodic launches: %w", err)
	}
	var out []*structs.PeriodicLaunch
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.PeriodicLaunch))
	}
	return out, nil
}

// UpsertPeriodicLaunch stores l (a copy), keeping the CreateIndex of the
// launch it replaces. A launch older than the stored one is ignored: the
// record only moves forward.
func (tx *Txn) UpsertPeriodicLaunch(l *structs.PeriodicLaunch) error {
	if l == nil || l.ID == "" {
		return fmt.Errorf("upsert periodic launch: missing job: %w", structs.ErrInvalid)
	}
	c := *l
	c.Namespace = namespaceOf(c.Namespace)
	existing, err := first[*structs.PeriodicLaunch](nil, tx.txn, TablePeriodicLaunch, indexID, c.Namespace, c.ID)
	if err != nil {
		return err
	}
	c.CreateIndex, c.ModifyIndex = tx.index, tx.index
	if existing != nil {
		if existing.Launch.After(c.Launch) {
			return nil
		}
		c.CreateIndex = existing.CreateIndex
	}
	if err := tx.txn.Insert(TablePeriodicLaunch, &c); err != nil {
		return fmt.Errorf("upsert periodic launch of job %q: %w", c.ID, err)
	}
	return setIndex(tx.txn, TablePeriodicLaunch, tx.index)
}

// deletePeriodicLaunch drops the job's launch, if any (the job is purged).
func (tx *Txn) deletePeriodicLaunch(namespace, jobID string) error {
	existing, err := first[*structs.PeriodicLaunch](nil, tx.txn, TablePeriodicLaunch, indexID, namespaceOf(namespace), jobID)
	if err != nil || existing == nil {
		return err
	}
	if err := tx.txn.Delete(TablePeriodicLaunch, existing); err != nil {
		return fmt.Errorf("delete periodic launch of job %q: %w", jobID, err)
	}
	return setIndex(tx.txn, TablePeriodicLaunch, tx.index)
}

// PeriodicLaunchRestore inserts a launch from a snapshot.
func (r *StateRestore) PeriodicLaunchRestore(l *structs.PeriodicLaunch) error {
	return r.insert(TablePeriodicLaunch, l.ID, l)
}
