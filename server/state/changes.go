package state

import (
	"sync"

	memdb "github.com/hashicorp/go-memdb"
)

// changeLog keeps the object changes of the last committed write, for
// the FSM to turn into events (server/events). A failed write leaves
// none.
type changeLog struct {
	mu      sync.Mutex
	changes memdb.Changes
}

func (l *changeLog) set(c memdb.Changes) {
	l.mu.Lock()
	l.changes = c
	l.mu.Unlock()
}

// TrackChanges makes the store keep each write's changes for
// TakeChanges. It costs memory per write (about a fifth more for a large
// one), so only the FSM's store does it. Call it before the store is
// written or shared.
func (s *StateStore) TrackChanges() { s.changes = &changeLog{} }

// TakeChanges returns the object changes of the last write, committed
// since the last call, and forgets them: each change of a table row
// once, with the row before (nil when inserted) and after (nil when
// deleted). The FSM calls it right after applying an entry; the rows
// are the store's and must not be mutated.
func (s *StateStore) TakeChanges() memdb.Changes {
	if s.changes == nil {
		return nil
	}
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	c := s.changes.changes
	s.changes.changes = nil
	return c
}
