package state

import (
	"errors"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestTakeChangesKeepsEveryWrite: the changes of every write committed
// since the last take come back together (an entry applied in two
// writes loses none), a failed write adds nothing, and a take forgets
// them.
func TestTakeChangesKeepsEveryWrite(t *testing.T) {
	s := newTestStore(t)
	s.TrackChanges()
	must(t, s.UpsertNode(10, testNode("n1")))
	must(t, s.UpsertNode(11, testNode("n2")))
	if err := s.Write(12, func(tx *Txn) error {
		must(t, tx.UpsertNode(testNode("n3")))
		return errors.New("rolled back")
	}); err == nil {
		t.Fatal("failing write committed")
	}
	nodes := map[string]bool{}
	for _, c := range s.TakeChanges() {
		if c.Table == TableNodes {
			nodes[c.After.(*structs.Node).ID] = true
		}
	}
	if !nodes["n1"] || !nodes["n2"] || nodes["n3"] || len(nodes) != 2 {
		t.Errorf("changed nodes %v, want n1 and n2 (both writes), not the rolled-back n3", nodes)
	}
	if c := s.TakeChanges(); len(c) != 0 {
		t.Errorf("second take: %d changes, want none", len(c))
	}
}
