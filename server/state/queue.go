package state

import (
	"fmt"
	"slices"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// TableQueues holds the fair-share queues an operator created or changed,
// written by the FSM. The default queue is not stored until it is
// changed, yet always exists (structs.DefaultQueueObject).
const TableQueues = "queues"

func queuesTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableQueues, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("Name"),
	}}
}

// QueueByName returns the queue called name, or nil. The default queue
// always exists.
func (s *StateStore) QueueByName(ws memdb.WatchSet, name string) (*structs.Queue, error) {
	return queueByName(ws, s.db.Txn(false), name)
}

func queueByName(ws memdb.WatchSet, txn *memdb.Txn, name string) (*structs.Queue, error) {
	q, err := first[*structs.Queue](ws, txn, TableQueues, indexID, name)
	if err != nil || q != nil || name != structs.DefaultQueue {
		return q, err
	}
	return structs.DefaultQueueObject(), nil
}

// Queues returns every queue, the default one included, sorted by name.
func (s *StateStore) Queues() ([]*structs.Queue, error) {
	return queues(nil, s.db.Txn(false))
}

func queues(ws memdb.WatchSet, txn *memdb.Txn) ([]*structs.Queue, error) {
	iter, err := txn.Get(TableQueues, indexID)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	byName := func(a, b *structs.Queue) int { return strings.Compare(a.Name, b.Name) }
	out := collect(ws, iter, nil, byName)
	if !slices.ContainsFunc(out, func(q *structs.Queue) bool { return q.Name == structs.DefaultQueue }) {
		out = append(out, structs.DefaultQueueObject())
		slices.SortFunc(out, byName)
	}
	return out, nil
}

// UpsertQueue creates or replaces a queue at index (see Txn.UpsertQueue).
func (s *StateStore) UpsertQueue(index uint64, q *structs.Queue) error {
	return s.Write(index, func(tx *Txn) error { return tx.UpsertQueue(q) })
}

// UpsertQueue canonicalizes, validates and stores a copy of q, keeping
// the CreateIndex of the queue it replaces. An invalid queue is refused
// (an error wrapping structs.ErrInvalid).
func (tx *Txn) UpsertQueue(in *structs.Queue) error {
	if err := in.CheckShape(); err != nil {
		return fmt.Errorf("upsert queue: %w", err)
	}
	q := in.Copy()
	q.Canonicalize()
	if err := q.Validate(); err != nil {
		return fmt.Errorf("upsert queue: %w", err)
	}
	q.CreateIndex, q.ModifyIndex = tx.index, tx.index
	existing, err := first[*structs.Queue](nil, tx.txn, TableQueues, indexID, q.Name)
	if err != nil {
		return err
	}
	if existing != nil {
		q.CreateIndex = existing.CreateIndex
	}
	if err := tx.txn.Insert(TableQueues, q); err != nil {
		return fmt.Errorf("upsert queue %q: %w", q.Name, err)
	}
	return setIndex(tx.txn, TableQueues, tx.index)
}

// DeleteQueue removes a queue at index (see Txn.DeleteQueue).
func (s *StateStore) DeleteQueue(index uint64, name string) error {
	return s.Write(index, func(tx *Txn) error { return tx.DeleteQueue(name) })
}

// DeleteQueue removes the queue called name. The default queue
// (structs.ErrDefaultQueue), one that jobs name (structs.ErrQueueInUse)
// and one that does not exist (structs.ErrNotFound) are refused.
func (tx *Txn) DeleteQueue(name string) error {
	if name == structs.DefaultQueue {
		return fmt.Errorf("delete queue %q: %w", name, structs.ErrDefaultQueue)
	}
	existing, err := first[*structs.Queue](nil, tx.txn, TableQueues, indexID, name)
	if err != nil {
		return err
	}
	if existing == nil {
		return fmt.Errorf("queue %q: %w", name, structs.ErrNotFound)
	}
	row, err := queueRowOf(tx.txn, name)
	if err != nil {
		return err
	}
	if row != nil && row.Jobs > 0 {
		return fmt.Errorf("delete queue %q: %w (%d %s; move or purge them first)",
			name, structs.ErrQueueInUse, row.Jobs, pluralJobs(row.Jobs))
	}
	if err := tx.txn.Delete(TableQueues, existing); err != nil {
		return fmt.Errorf("delete queue %q: %w", name, err)
	}
	return setIndex(tx.txn, TableQueues, tx.index)
}

func pluralJobs(n int) string {
	if n == 1 {
		return "job names it"
	}
	return "jobs name it"
}

// QueueRestore inserts a queue as it is.
func (r *StateRestore) QueueRestore(q *structs.Queue) error {
	return r.insert(TableQueues, q.Name, q)
}
