package state

import (
	"sync"

	memdb "github.com/hashicorp/go-memdb"
)

// changeLog keeps the object changes of the writes committed since the
// FSM last took them, for it to turn into events (server/events). A
// failed write adds none.
type changeLog struct {
	mu      sync.Mutex
	changes memdb.Changes
}

func (l *changeLog) add(c memdb.Changes) {
	l.mu.Lock()
	l.changes = append(l.changes, c...)
	l.mu.Unlock()
}

// TrackChanges makes the store keep each write's changes for
// TakeChanges. It costs memory per write (about a fifth more for a large
// one), so only the FSM's store does it. Call it before the store is
// written or shared.
func (s *StateStore) TrackChanges() { s.changes = &changeLog{} }

// TakeChanges returns the object changes of the writes committed since
// the last call (all of one entry's, however many writes it took), and
// forgets them: each change of a table row
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
