package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func blockedEval(id, job string, createIndex, snapshotIndex uint64) *structs.Evaluation {
	e := testEval(id, job, "batch", 50)
	e.Status = structs.EvalStatusBlocked
	e.CreateIndex = createIndex
	e.SnapshotIndex = snapshotIndex
	return e
}

func newTestBlocked(t *testing.T) (*BlockedEvals, *EvalBroker) {
	t.Helper()
	b, _ := newTestBroker(t, 3)
	blocked := NewBlockedEvals(b, nil)
	blocked.SetEnabled(true)
	return blocked, b
}

// readyIDs dequeues everything ready and returns the IDs, sorted.
func readyIDs(t *testing.T, b *EvalBroker) []string {
	t.Helper()
	var ids []string
	for b.Stats().TotalReady > 0 {
		e, _ := mustDequeue(t, b, "batch", "service")
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	return ids
}

func cancelledIDs(blocked *BlockedEvals) []string {
	var ids []string
	for _, e := range blocked.DrainCancelled() {
		if e.Status != structs.EvalStatusCancelled {
			ids = append(ids, e.ID+"(status "+e.Status+")")
			continue
		}
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestBlockedEvals_Block(t *testing.T) {
	tests := []struct {
		name          string
		unblockFirst  uint64 // Unblock(index) before blocking, 0 = none
		block         []*structs.Evaluation
		wantImmediate []string // in the broker before Unblock
		wantCancelled []string
		wantUnblocked []string // in the broker after Unblock
	}{
		{
			name:          "held until unblock",
			block:         []*structs.Evaluation{blockedEval("a", "j1", 10, 9), blockedEval("b", "j2", 11, 9)},
			wantUnblocked: []string{"a", "b"},
		},
		{
			name:          "newer replaces older of the same job",
			block:         []*structs.Evaluation{blockedEval("old", "j", 10, 9), blockedEval("new", "j", 20, 19)},
			wantCancelled: []string{"old"},
			wantUnblocked: []string{"new"},
		},
		{
			name:          "older arriving late is cancelled",
			block:         []*structs.Evaluation{blockedEval("new", "j", 20, 19), blockedEval("old", "j", 10, 9)},
			wantCancelled: []string{"old"},
			wantUnblocked: []string{"new"},
		},
		{
			name:          "same eval blocked twice is kept once",
			block:         []*structs.Evaluation{blockedEval("a", "j", 10, 9), blockedEval("a", "j", 10, 12)},
			wantUnblocked: []string{"a"},
		},
		{
			name:          "snapshot older than last unblock goes straight to the broker",
			unblockFirst:  50,
			block:         []*structs.Evaluation{blockedEval("missed", "j1", 40, 45), blockedEval("fresh", "j2", 55, 50)},
			wantImmediate: []string{"missed"},
			wantUnblocked: []string{"fresh"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocked, b := newTestBlocked(t)
			if tt.unblockFirst != 0 {
				blocked.Unblock(tt.unblockFirst)
			}
			for _, e := range tt.block {
				blocked.Block(e)
			}
			if got := readyIDs(t, b); !slices.Equal(got, tt.wantImmediate) {
				t.Errorf("ready before unblock = %v, want %v", got, tt.wantImmediate)
			}
			if got := cancelledIDs(blocked); !slices.Equal(got, tt.wantCancelled) {
				t.Errorf("cancelled = %v, want %v", got, tt.wantCancelled)
			}
			blocked.Unblock(tt.unblockFirst + 100)
			if got := readyIDs(t, b); !slices.Equal(got, tt.wantUnblocked) {
				t.Errorf("ready after unblock = %v, want %v", got, tt.wantUnblocked)
			}
			if got := blocked.Stats().TotalBlocked; got != 0 {
				t.Errorf("TotalBlocked after unblock = %d, want 0", got)
			}
		})
	}
}

func TestBlockedEvals_MissedUnblockReplacesOlder(t *testing.T) {
	blocked, b := newTestBlocked(t)
	blocked.Unblock(30)
	blocked.Block(blockedEval("mid", "j", 32, 31)) // saw the capacity change: held
	if got := readyIDs(t, b); len(got) != 0 {
		t.Fatalf("ready = %v, want none", got)
	}
	// Committed later, but computed from a snapshot before the unblock.
	blocked.Block(blockedEval("new", "j", 40, 29))
	if got := readyIDs(t, b); !slices.Equal(got, []string{"new"}) {
		t.Errorf("ready = %v, want [new] (snapshot 29 < unblock 30)", got)
	}
	if got := cancelledIDs(blocked); !slices.Equal(got, []string{"mid"}) {
		t.Errorf("cancelled = %v, want [mid]", got)
	}
	if got := blocked.Stats().TotalBlocked; got != 0 {
		t.Errorf("TotalBlocked = %d, want 0", got)
	}
	select {
	case <-blocked.CancelledCh():
	default:
		t.Error("CancelledCh not signalled")
	}
}

func TestBlockedEvals_ReblockWhileUnacked(t *testing.T) {
	blocked, b := newTestBlocked(t)
	blocked.Block(blockedEval("a", "j", 10, 9))
	blocked.Unblock(20)
	e, token := mustDequeue(t, b, "batch")

	// The scheduler still cannot place; meanwhile capacity changed again.
	blocked.Unblock(30)
	re := e.Copy()
	re.SnapshotIndex = 25
	blocked.Reblock(re)
	dequeueNone(t, b, "batch")
	if err := b.Ack(e.ID, token); err != nil {
		t.Fatal(err)
	}
	again, _ := mustDequeue(t, b, "batch")
	if again.ID != "a" || again.SnapshotIndex != 25 {
		t.Errorf("after ack = %s (snapshot %d), want a (25)", again.ID, again.SnapshotIndex)
	}
}

func TestBlockedEvals_UntrackAndDisable(t *testing.T) {
	blocked, b := newTestBlocked(t)
	blocked.Block(blockedEval("a", "j1", 10, 9))
	blocked.Block(blockedEval("b", "j2", 11, 9))
	blocked.Untrack("a")
	if got := blocked.Stats().TotalBlocked; got != 1 {
		t.Errorf("TotalBlocked after untrack = %d, want 1", got)
	}
	blocked.SetEnabled(false)
	blocked.Block(blockedEval("c", "j3", 12, 9))
	blocked.Unblock(100)
	if got := readyIDs(t, b); len(got) != 0 {
		t.Errorf("disabled tracker unblocked %v", got)
	}
	if s := blocked.Stats(); s.TotalBlocked != 0 || s.UnblockIndex != 0 {
		t.Errorf("disabled stats = %+v, want empty", s)
	}
}

// TestBlockedEvals_MaxPlansRetriesWithoutCapacityChange: an evaluation
// blocked because its plans lost to concurrent ones found room, so it is
// not parked until capacity changes: it is back in the broker after
// MaxPlansRetryWait, once, and a job's later capacity-blocked evaluation
// still waits for an Unblock.
func TestBlockedEvals_MaxPlansRetriesWithoutCapacityChange(t *testing.T) {
	b, clock := newTestBroker(t, 3)
	blocked := NewBlockedEvals(b, nil)
	blocked.SetEnabled(true)
	lost := blockedEval("lost", "j1", 10, 9)
	lost.TriggeredBy = structs.EvalTriggerMaxPlans
	blocked.Block(lost)
	blocked.Block(blockedEval("full", "j2", 11, 9))
	if s := blocked.Stats(); s.TotalBlocked != 1 {
		t.Errorf("TotalBlocked = %d, want 1 (only the capacity-blocked one)", s.TotalBlocked)
	}
	dequeueNone(t, b, "batch")
	clock.Advance(MaxPlansRetryWait - time.Millisecond)
	dequeueNone(t, b, "batch")
	clock.Advance(time.Millisecond)
	e, token := mustDequeue(t, b, "batch")
	if e.ID != "lost" || e.Status != structs.EvalStatusBlocked || e.Wait != 0 {
		t.Errorf("retried %s/%s wait %v, want lost/blocked with no wait of its own (the broker's is not recorded)", e.ID, e.Status, e.Wait)
	}
	dequeueNone(t, b, "batch")

	// Losing again while the worker still holds it (a reblock before its
	// Ack): the wait starts from the Ack, not at once, however often.
	for range 2 {
		blocked.Reblock(e)
		if err := b.Ack(e.ID, token); err != nil {
			t.Fatal(err)
		}
		dequeueNone(t, b, "batch")
		if s := b.Stats(); s.TotalWaiting != 1 || s.TotalUnacked != 0 {
			t.Fatalf("after the ack: %+v, want it waiting", s)
		}
		clock.Advance(MaxPlansRetryWait)
		e, token = mustDequeue(t, b, "batch")
	}
	// A Nack instead of an Ack waits the same.
	blocked.Reblock(e)
	if err := b.Nack(e.ID, token); err != nil {
		t.Fatal(err)
	}
	dequeueNone(t, b, "batch")
	clock.Advance(MaxPlansRetryWait)
	if e, _ = mustDequeue(t, b, "batch"); e.ID != "lost" {
		t.Errorf("after the nack's wait: dequeued %s, want lost", e.ID)
	}
}

// TestBlockedEvals_UnblockDoesNotWaitAgain: a follow-up evaluation's Wait
// was served before it ran; once blocked, an unblock readies it at once.
func TestBlockedEvals_UnblockDoesNotWaitAgain(t *testing.T) {
	blocked, b := newTestBlocked(t)
	e := blockedEval("followup", "j", 10, 9)
	e.Wait = 30 * time.Second
	blocked.Block(e)
	blocked.Unblock(20)
	if got, _ := mustDequeue(t, b, "batch"); got.ID != "followup" || got.Wait != 0 {
		t.Errorf("unblocked %s with wait %v, want followup ready at once", got.ID, got.Wait)
	}
	if e.Wait != 30*time.Second {
		t.Errorf("the blocked evaluation itself was changed: wait %v", e.Wait)
	}
}
