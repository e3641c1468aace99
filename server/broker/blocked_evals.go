package broker

import (
	"sync"
	"time"

	"github.com/droverhq/drover/structs"
	"github.com/hashicorp/go-hclog"
)

// BlockedEvals parks evaluations that could not place every allocation
// until capacity changes (a node registers or comes back, allocations
// stop). It keeps at most one blocked evaluation per job: a newer one
// replaces the older, which is reported by DrainCancelled so the leader
// can persist it as cancelled.
//
// Unblock(index) moves every blocked evaluation to the broker. An
// evaluation blocked with a SnapshotIndex older than the last Unblock was
// computed before that capacity freed, so it goes to the broker at once
// instead of waiting for the next change.
//
// An evaluation blocked because its plans lost to concurrent ones in
// every attempt (structs.EvalTriggerMaxPlans) found room: no capacity
// change may come to wake it, so it goes back to the broker after
// MaxPlansRetryWait instead.
type BlockedEvals struct {
	broker *EvalBroker
	logger hclog.Logger

	mu           sync.Mutex
	enabled      bool
	byJob        map[jobKey]*structs.Evaluation
	jobOf        map[string]jobKey // evaluation ID -> job, for Untrack
	unblockIndex uint64
	cancelled    []*structs.Evaluation
	cancelledCh  chan struct{} // one-slot signal: cancelled is not empty
}

// MaxPlansRetryWait is how long an evaluation whose plans lost to
// concurrent ones in every attempt waits before it is tried again: long
// enough for the burst of plans it raced with to pass.
const MaxPlansRetryWait = time.Second

// NewBlockedEvals returns a disabled tracker that unblocks into broker.
func NewBlockedEvals(broker *EvalBroker, logger hclog.Logger) *BlockedEvals {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &BlockedEvals{
		broker:      broker,
		logger:      logger,
		byJob:       map[jobKey]*structs.Evaluation{},
		jobOf:       map[string]jobKey{},
		cancelledCh: make(chan struct{}, 1),
	}
}

// SetEnabled turns tracking on (leader) or off; turning it off forgets
// every blocked and cancelled evaluation and the last unblock index.
func (b *BlockedEvals) SetEnabled(enabled bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enabled = enabled
	if !enabled {
		b.byJob = map[jobKey]*structs.Evaluation{}
		b.jobOf = map[string]jobKey{}
		b.unblockIndex = 0
		b.cancelled = nil
	}
}

// Enabled reports whether evaluations are tracked.
func (b *BlockedEvals) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// Block parks eval until capacity changes. It never blocks the caller.
func (b *BlockedEvals) Block(eval *structs.Evaluation) { b.block(eval) }

// Reblock parks again an evaluation that came out of the tracker, is still
// unacked in the broker, and still does not fit. If capacity changed
// meanwhile the broker queues it again after its Ack.
func (b *BlockedEvals) Reblock(eval *structs.Evaluation) { b.block(eval) }

func (b *BlockedEvals) block(eval *structs.Evaluation) {
	b.mu.Lock()
	if !b.enabled {
		b.mu.Unlock()
		return
	}
	missed := eval.SnapshotIndex != 0 && eval.SnapshotIndex < b.unblockIndex
	if eval.TriggeredBy == structs.EvalTriggerMaxPlans {
		b.untrackLocked(eval.ID)
		b.mu.Unlock()
		b.logger.Debug("evaluation lost its plans to concurrent ones, retrying", "eval_id", eval.ID, "wait", MaxPlansRetryWait)
		b.broker.EnqueueAfter(eval, MaxPlansRetryWait)
		return
	}
	if eval.Wait > 0 {
		// A follow-up's wait was served before it ran; an unblock must
		// not wait again.
		eval = eval.Copy()
		eval.Wait = 0
	}
	key := keyOf(eval)
	old := b.byJob[key]
	switch {
	case old != nil && old.ID != eval.ID && newer(old, eval):
		// A newer evaluation of the job is already blocked.
		b.cancelLocked(eval)
		b.mu.Unlock()
		return
	case old != nil && old.ID != eval.ID:
		delete(b.jobOf, old.ID)
		delete(b.byJob, key)
		b.cancelLocked(old)
	}
	if missed {
		b.untrackLocked(eval.ID)
		b.mu.Unlock()
		b.logger.Debug("evaluation missed an unblock, enqueueing", "eval_id", eval.ID, "snapshot_index", eval.SnapshotIndex)
		b.broker.Enqueue(eval)
		return
	}
	b.byJob[key] = eval
	b.jobOf[eval.ID] = key
	b.mu.Unlock()
}

// newer reports whether a was created after b. Evaluations not yet in
// state (CreateIndex 0) count by creation time.
func newer(a, b *structs.Evaluation) bool {
	if a.CreateIndex != b.CreateIndex {
		return a.CreateIndex > b.CreateIndex
	}
	return a.CreateTime > b.CreateTime
}

func (b *BlockedEvals) cancelLocked(eval *structs.Evaluation) {
	c := eval.Copy()
	c.Status = structs.EvalStatusCancelled
	c.StatusDescription = "superseded by a newer blocked evaluation"
	b.cancelled = append(b.cancelled, c)
	select {
	case b.cancelledCh <- struct{}{}:
	default:
	}
}

// Untrack forgets a blocked evaluation (it completed or was cancelled
// elsewhere).
func (b *BlockedEvals) Untrack(evalID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.untrackLocked(evalID)
}

func (b *BlockedEvals) untrackLocked(evalID string) {
	key, ok := b.jobOf[evalID]
	if !ok {
		return
	}
	delete(b.jobOf, evalID)
	delete(b.byJob, key)
}

// Unblock records that capacity changed at index and moves every blocked
// evaluation to the broker.
func (b *BlockedEvals) Unblock(index uint64) {
	b.mu.Lock()
	if !b.enabled {
		b.mu.Unlock()
		return
	}
	if index > b.unblockIndex {
		b.unblockIndex = index
	}
	evals := make([]*structs.Evaluation, 0, len(b.byJob))
	for _, e := range b.byJob {
		evals = append(evals, e)
	}
	b.byJob = map[jobKey]*structs.Evaluation{}
	b.jobOf = map[string]jobKey{}
	b.mu.Unlock()
	if len(evals) > 0 {
		b.logger.Debug("capacity changed, unblocking evaluations", "index", index, "count", len(evals))
		b.broker.EnqueueAll(evals)
	}
}

// CancelledCh is signalled when DrainCancelled has something to return.
func (b *BlockedEvals) CancelledCh() <-chan struct{} { return b.cancelledCh }

// DrainCancelled returns (and forgets) the evaluations superseded since the
// last call, with Status already set to cancelled.
func (b *BlockedEvals) DrainCancelled() []*structs.Evaluation {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.cancelled
	b.cancelled = nil
	return out
}

// BlockedStats counts the tracker's evaluations.
type BlockedStats struct {
	TotalBlocked   int
	TotalCancelled int // superseded, not yet drained
	UnblockIndex   uint64
}

// Stats returns the current counts.
func (b *BlockedEvals) Stats() BlockedStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BlockedStats{TotalBlocked: len(b.byJob), TotalCancelled: len(b.cancelled), UnblockIndex: b.unblockIndex}
}
