// Package state is the servers' in-memory state: nodes, jobs, evaluations
// and allocations in a go-memdb database, written only by the Raft FSM and
// read by everything else through snapshots and blocking queries.
//
// Objects in the store are immutable: writes copy before they change
// anything, and readers get the stored pointers, which they must not
// mutate (Copy first). The store keeps each job's Status in step with its
// evaluations and allocations. It does no I/O and knows nothing of Raft,
// RPC or scheduling.
package state

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	memdb "github.com/hashicorp/go-memdb"
)

// StateStore is the servers' state. It is safe for concurrent use: one
// writer at a time (the FSM), any number of readers.
type StateStore struct {
	db *memdb.MemDB

	abandonOnce *sync.Once
	abandonCh   chan struct{}
	// changes, once TrackChanges was called, are the committed writes'
	// not yet taken (changes.go).
	changes *changeLog
}

// StateSnapshot is a frozen view of a StateStore with the same read
// methods. Writes to it are possible but never reach the store.
type StateSnapshot struct {
	*StateStore
}

// NewStateStore returns an empty state store.
func NewStateStore() (*StateStore, error) {
	db, err := memdb.NewMemDB(Schema())
	if err != nil {
		return nil, fmt.Errorf("create state store: %w", err)
	}
	return newStore(db), nil
}

func newStore(db *memdb.MemDB) *StateStore {
	return &StateStore{db: db, abandonOnce: &sync.Once{}, abandonCh: make(chan struct{})}
}

// Snapshot returns a point-in-time view of the store. It is cheap: the
// underlying radix trees are shared, not copied.
func (s *StateStore) Snapshot() (*StateSnapshot, error) {
	return &StateSnapshot{StateStore: newStore(s.db.Snapshot())}, nil
}

// AbandonCh is closed when the store has been replaced (by an FSM
// restore): blocking queries on it must end and re-read from the new one.
func (s *StateStore) AbandonCh() <-chan struct{} { return s.abandonCh }

// Abandon closes AbandonCh. The FSM calls it on the store a restore
// replaced; calling it again does nothing.
func (s *StateStore) Abandon() { s.abandonOnce.Do(func() { close(s.abandonCh) }) }

// Index returns the Raft index at which table last changed, or 0.
func (s *StateStore) Index(table string) (uint64, error) {
	raw, err := s.db.Txn(false).First(TableIndex, indexID, table)
	if err != nil {
		return 0, fmt.Errorf("read index of %s: %w", table, err)
	}
	if raw == nil {
		return 0, nil
	}
	return raw.(*IndexEntry).Value, nil
}

// Indexes returns every table's index, keyed by table name.
func (s *StateStore) Indexes() (map[string]uint64, error) {
	iter, err := s.db.Txn(false).Get(TableIndex, indexID)
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	out := map[string]uint64{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		e := raw.(*IndexEntry)
		out[e.Key] = e.Value
	}
	return out, nil
}

// LatestIndex returns the highest index of any table.
func (s *StateStore) LatestIndex() (uint64, error) {
	all, err := s.Indexes()
	if err != nil {
		return 0, err
	}
	var max uint64
	for _, v := range all {
		max = maxIndex(max, v)
	}
	return max, nil
}

// QueryFn reads from s, adding what it read to ws, and returns the index
// the answer corresponds to.
type QueryFn func(ws memdb.WatchSet, s *StateStore) (index uint64, err error)

// BlockingQuery runs fn until the index it returns is above minIndex,
// waiting between runs for something fn read to change. When ctx ends (the
// query's wait time is up) or the store is abandoned, the last answer is
// returned without error: a blocking query that timed out is a normal
// answer. A minIndex of 0 never blocks.
func (s *StateStore) BlockingQuery(ctx context.Context, minIndex uint64, fn QueryFn) (uint64, error) {
	for {
		ws := memdb.NewWatchSet()
		ws.Add(s.abandonCh)
		index, err := fn(ws, s)
		if err != nil || minIndex == 0 || index > minIndex {
			return index, err
		}
		if err := ws.WatchCtx(ctx); err != nil {
			return index, nil
		}
		select {
		case <-s.abandonCh:
			return index, nil
		default:
		}
	}
}

// write runs fn in one write transaction, committed only if fn succeeds.
func (s *StateStore) write(fn func(txn *memdb.Txn) error) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	if s.changes != nil {
		txn.TrackChanges()
	}
	if err := fn(txn); err != nil {
		return err
	}
	txn.Commit()
	if s.changes != nil {
		s.changes.add(txn.Changes())
	}
	return nil
}

// allNamespaces reports whether namespace selects every namespace.
func allNamespaces(namespace string) bool { return namespace == "" || namespace == "*" }

// inNamespace reports whether an object in ns is selected by namespace.
func inNamespace(namespace, ns string) bool { return allNamespaces(namespace) || namespace == ns }

// collect drains iter into a slice of T, keeping those keep accepts, and
// sorts them with cmp. It adds the iterator to ws.
func collect[T any](ws memdb.WatchSet, iter memdb.ResultIterator, keep func(T) bool, cmp func(a, b T) int) []T {
	ws.Add(iter.WatchCh())
	var out []T
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		obj := raw.(T)
		if keep == nil || keep(obj) {
			out = append(out, obj)
		}
	}
	slices.SortFunc(out, cmp)
	return out
}

// first returns the object with args on index of table, adding its watch
// channel to ws.
func first[T any](ws memdb.WatchSet, txn *memdb.Txn, table, index string, args ...any) (T, error) {
	var zero T
	ch, raw, err := txn.FirstWatch(table, index, args...)
	if err != nil {
		return zero, fmt.Errorf("read %s: %w", table, err)
	}
	ws.Add(ch)
	if raw == nil {
		return zero, nil
	}
	return raw.(T), nil
}

// byIDThenNamespace orders by ID, then namespace, for stable listings.
func byIDThenNamespace(aID, aNS, bID, bNS string) int {
	if c := strings.Compare(aID, bID); c != 0 {
		return c
	}
	return strings.Compare(aNS, bNS)
}

func maxIndex(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
