package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/droverhq/drover/structs"
	"github.com/hashicorp/go-hclog"
)

// Errors returned by Ack, Nack and OutstandingReset.
var (
	// ErrNotOutstanding: the evaluation is not dequeued (it was acked,
	// nacked, timed out, or the broker was flushed).
	ErrNotOutstanding = errors.New("evaluation not outstanding")
	// ErrTokenMismatch: the evaluation was redelivered since this token was
	// handed out.
	ErrTokenMismatch = errors.New("evaluation token does not match")
	// ErrNoSchedulers: Dequeue was called without scheduler types.
	ErrNoSchedulers = errors.New("no scheduler types given")
)

// Option configures an EvalBroker.
type Option func(*EvalBroker)

// WithClock makes the broker time nack timeouts with c.
func WithClock(c Clock) Option { return func(b *EvalBroker) { b.clock = c } }

// jobKey names a job across namespaces.
type jobKey struct{ namespace, jobID string }

func keyOf(e *structs.Evaluation) jobKey { return jobKey{e.Namespace, e.JobID} }

// unacked is a dequeued evaluation waiting for Ack or Nack.
type unacked struct {
	eval  *structs.Evaluation
	token string
	timer Timer
}

// EvalBroker hands evaluations to scheduler workers. Ready evaluations are
// queued per scheduler type and dequeued by priority, then in arrival
// order. At most one evaluation per job is ready or unacked at a time; the
// others wait in the job's pending queue until it is acked. A dequeued
// evaluation must be acked or nacked within the nack timeout, else it is
// redelivered; after deliveryLimit deliveries it is given up and returned
// by DequeueFailed. An evaluation with a Wait is held that long before it
// is enqueued (a delayed reschedule). A disabled broker (a follower's)
// drops everything.
type EvalBroker struct {
	nackTimeout   time.Duration
	deliveryLimit int
	logger        hclog.Logger
	clock         Clock

	mu      sync.Mutex
	enabled bool
	seq     uint64
	// deliveries counts how often each tracked evaluation (ready, unacked
	// or pending) was dequeued.
	deliveries map[string]int
	ready      map[string]*evalQueue // by scheduler type
	unack      map[string]*unacked   // by evaluation ID
	inflight   map[jobKey]string     // the job's ready or unacked evaluation
	pending    map[jobKey]*evalQueue // waiting behind the job's inflight one
	// requeue holds evaluations enqueued again while unacked (a reblocked
	// evaluation that capacity already freed); they go back to ready on Ack.
	requeue map[string]requeued
	// waiting holds evaluations with a Wait until their timer fires.
	waiting map[string]*waitingEval
	failed  []*structs.Evaluation
	// changed is closed (and replaced) whenever something may have become
	// dequeueable, waking blocked Dequeue calls.
	changed chan struct{}
}

// NewEvalBroker returns a disabled broker. nackTimeout is how long a worker
// may hold an evaluation without Ack, Nack or OutstandingReset;
// deliveryLimit is how many deliveries an evaluation gets (at least 1).
func NewEvalBroker(nackTimeout time.Duration, deliveryLimit int, logger hclog.Logger, opts ...Option) *EvalBroker {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if deliveryLimit < 1 {
		deliveryLimit = 1
	}
	b := &EvalBroker{
		nackTimeout:   nackTimeout,
		deliveryLimit: deliveryLimit,
		logger:        logger,
		clock:         RealClock{},
		changed:       make(chan struct{}),
	}
	for _, o := range opts {
		o(b)
	}
	b.resetLocked()
	return b
}

// requeued is an evaluation enqueued again while unacked, and how long
// it waits once acked.
type requeued struct {
	eval *structs.Evaluation
	wait time.Duration
}

// waitingEval is an evaluation whose Wait has not passed yet; its pointer
// identifies the timer's generation across a flush.
type waitingEval struct {
	eval  *structs.Evaluation
	timer Timer
}

// resetLocked empties every queue and stops every timer.
func (b *EvalBroker) resetLocked() {
	for _, u := range b.unack {
		u.timer.Stop()
	}
	for _, w := range b.waiting {
		w.timer.Stop()
	}
	b.waiting = map[string]*waitingEval{}
	b.deliveries = map[string]int{}
	b.ready = map[string]*evalQueue{}
	b.unack = map[string]*unacked{}
	b.inflight = map[jobKey]string{}
	b.pending = map[jobKey]*evalQueue{}
	b.requeue = map[string]requeued{}
	b.failed = nil
}

// SetEnabled turns the broker on (leader) or off (follower). Turning it
// off flushes every queue; outstanding tokens become invalid.
func (b *EvalBroker) SetEnabled(enabled bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enabled = enabled
	if !enabled {
		b.resetLocked()
	}
	b.notifyLocked()
}

// Enabled reports whether the broker accepts evaluations.
func (b *EvalBroker) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// Enqueue adds an evaluation. It is ignored when the broker is disabled or
// already holds the evaluation; an evaluation enqueued while it is
// unacked is queued again after its Ack. One with a Wait becomes ready
// only after that long (counted from now: a new leader waits again).
func (b *EvalBroker) Enqueue(eval *structs.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueueLocked(eval, eval.Wait)
}

// EnqueueAfter is Enqueue with wait in place of the evaluation's own
// Wait, which is left as it is: the delay is the broker's, not part of
// the evaluation that the scheduler records. An evaluation unacked now
// waits from its Ack (or Nack).
func (b *EvalBroker) EnqueueAfter(eval *structs.Evaluation, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueueLocked(eval, wait)
}

// EnqueueAll adds every evaluation, as Enqueue does.
func (b *EvalBroker) EnqueueAll(evals []*structs.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range evals {
		b.enqueueLocked(e, e.Wait)
	}
}

func (b *EvalBroker) enqueueLocked(eval *structs.Evaluation, wait time.Duration) {
	if !b.enabled {
		return
	}
	if _, ok := b.unack[eval.ID]; ok {
		b.requeue[eval.ID] = requeued{eval: eval, wait: wait}
		return
	}
	if _, ok := b.deliveries[eval.ID]; ok {
		return
	}
	if _, ok := b.waiting[eval.ID]; ok {
		return
	}
	if wait > 0 {
		b.waitLocked(eval, wait)
		return
	}
	b.readyLocked(eval)
}

// waitLocked holds eval in waiting until wait has passed.
func (b *EvalBroker) waitLocked(eval *structs.Evaluation, wait time.Duration) {
	w := &waitingEval{eval: eval}
	w.timer = b.clock.AfterFunc(wait, func() { b.waitOver(w) })
	b.waiting[eval.ID] = w
}

// requeueLocked puts back an evaluation enqueued again while it was
// unacked: ready at once, keeping its job's slot, or, with a wait, out of
// the job's slot until the wait has passed.
func (b *EvalBroker) requeueLocked(again requeued) {
	if again.wait <= 0 {
		b.deliveries[again.eval.ID] = 0
		b.pushReadyLocked(again.eval)
		return
	}
	delete(b.deliveries, again.eval.ID)
	b.releaseJobLocked(keyOf(again.eval))
	b.waitLocked(again.eval, again.wait)
}

// waitOver enqueues a waiting evaluation, unless the broker was flushed
// since it started waiting.
func (b *EvalBroker) waitOver(w *waitingEval) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled || b.waiting[w.eval.ID] != w {
		return
	}
	delete(b.waiting, w.eval.ID)
	b.readyLocked(w.eval)
}

// readyLocked makes a new evaluation ready, or pending behind its job's
// in-flight one.
func (b *EvalBroker) readyLocked(eval *structs.Evaluation) {
	b.deliveries[eval.ID] = 0
	key := keyOf(eval)
	if id, busy := b.inflight[key]; busy && id != eval.ID {
		q := b.pending[key]
		if q == nil {
			q = &evalQueue{}
			b.pending[key] = q
		}
		b.seq++
		q.push(eval, b.seq)
		return
	}
	b.inflight[key] = eval.ID
	b.pushReadyLocked(eval)
}

func (b *EvalBroker) pushReadyLocked(eval *structs.Evaluation) {
	q := b.ready[eval.Type]
	if q == nil {
		q = &evalQueue{}
		b.ready[eval.Type] = q
	}
	b.seq++
	q.push(eval, b.seq)
	b.notifyLocked()
}

func (b *EvalBroker) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Dequeue blocks until an evaluation of one of the scheduler types is
// ready (or ctx is done) and returns it with the token to Ack or Nack it.
// A disabled broker hands out nothing.
func (b *EvalBroker) Dequeue(ctx context.Context, schedulers []string) (*structs.Evaluation, string, error) {
	if len(schedulers) == 0 {
		return nil, "", ErrNoSchedulers
	}
	for {
		b.mu.Lock()
		if b.enabled {
			if eval, token, ok := b.dequeueLocked(schedulers); ok {
				b.mu.Unlock()
				return eval, token, nil
			}
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, "", fmt.Errorf("dequeue: %w", ctx.Err())
		case <-ch:
		}
	}
}

func (b *EvalBroker) dequeueLocked(schedulers []string) (*structs.Evaluation, string, bool) {
	var best *evalQueue
	for _, s := range schedulers {
		q := b.ready[s]
		if q == nil || q.Len() == 0 {
			continue
		}
		if best == nil || before(q.peek(), best.peek()) {
			best = q
		}
	}
	if best == nil {
		return nil, "", false
	}
	eval := best.pop().eval
	token := structs.GenerateUUID()
	b.deliveries[eval.ID]++
	b.unack[eval.ID] = &unacked{eval: eval, token: token, timer: b.nackTimer(eval.ID, token)}
	return eval, token, true
}

func (b *EvalBroker) nackTimer(evalID, token string) Timer {
	return b.clock.AfterFunc(b.nackTimeout, func() {
		if err := b.Nack(evalID, token); err == nil {
			b.logger.Warn("evaluation not acked in time, redelivering", "eval_id", evalID, "timeout", b.nackTimeout)
		}
	})
}

// outstandingLocked returns the unacked evaluation if token is current.
func (b *EvalBroker) outstandingLocked(evalID, token string) (*unacked, error) {
	u, ok := b.unack[evalID]
	switch {
	case !ok:
		return nil, fmt.Errorf("evaluation %s: %w", evalID, ErrNotOutstanding)
	case u.token != token:
		return nil, fmt.Errorf("evaluation %s: %w", evalID, ErrTokenMismatch)
	}
	return u, nil
}

// Ack marks a dequeued evaluation done. The next pending evaluation of
// the same job becomes ready.
func (b *EvalBroker) Ack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	u.timer.Stop()
	delete(b.unack, evalID)
	if again, ok := b.requeue[evalID]; ok {
		delete(b.requeue, evalID)
		b.requeueLocked(again)
		return nil
	}
	delete(b.deliveries, evalID)
	b.releaseJobLocked(keyOf(u.eval))
	return nil
}

// Nack hands a dequeued evaluation back for redelivery; once it has been
// delivered deliveryLimit times it is given up (see DequeueFailed).
func (b *EvalBroker) Nack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return fmt.Errorf("nack: %w", err)
	}
	u.timer.Stop()
	delete(b.unack, evalID)
	eval := u.eval
	if again, ok := b.requeue[evalID]; ok {
		delete(b.requeue, evalID)
		if again.wait > 0 {
			// Its wait starts over, as after an Ack.
			b.requeueLocked(again)
			return nil
		}
		eval = again.eval
	}
	if b.deliveries[evalID] < b.deliveryLimit {
		b.pushReadyLocked(eval)
		return nil
	}
	b.logger.Warn("evaluation reached its delivery limit", "eval_id", evalID, "limit", b.deliveryLimit)
	delete(b.deliveries, evalID)
	b.failed = append(b.failed, eval)
	b.releaseJobLocked(keyOf(eval))
	b.notifyLocked()
	return nil
}

// releaseJobLocked frees the job's in-flight slot and readies its next
// pending evaluation, if any.
func (b *EvalBroker) releaseJobLocked(key jobKey) {
	delete(b.inflight, key)
	q := b.pending[key]
	if q == nil {
		return
	}
	next := q.pop().eval
	if q.Len() == 0 {
		delete(b.pending, key)
	}
	b.inflight[key] = next.ID
	b.pushReadyLocked(next)
}

// OutstandingReset restarts the nack timer of a dequeued evaluation, for a
// worker that is still busy with it.
func (b *EvalBroker) OutstandingReset(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	u.timer.Stop()
	u.timer = b.nackTimer(evalID, token)
	return nil
}

// DequeueFailed blocks until an evaluation reached its delivery limit (or
// ctx is done) and returns it, for the leader to mark failed in state.
func (b *EvalBroker) DequeueFailed(ctx context.Context) (*structs.Evaluation, error) {
	for {
		b.mu.Lock()
		if len(b.failed) > 0 {
			e := b.failed[0]
			b.failed[0] = nil
			b.failed = b.failed[1:]
			b.mu.Unlock()
			return e, nil
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dequeue failed: %w", ctx.Err())
		case <-ch:
		}
	}
}

// Stats counts the broker's evaluations.
type Stats struct {
	TotalReady   int
	TotalUnacked int
	// TotalJobBlocked counts evaluations waiting behind another
	// evaluation of their job.
	TotalJobBlocked int
	// TotalWaiting counts evaluations whose Wait has not passed.
	TotalWaiting int
	// TotalFailed counts evaluations given up and not yet taken by
	// DequeueFailed.
	TotalFailed int
	// ByScheduler counts ready and unacked evaluations per scheduler type.
	ByScheduler map[string]SchedulerStats
}

// SchedulerStats counts one scheduler type's evaluations.
type SchedulerStats struct {
	Ready   int
	Unacked int
}

// Stats returns the current counts.
func (b *EvalBroker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{
		TotalUnacked: len(b.unack), TotalWaiting: len(b.waiting), TotalFailed: len(b.failed),
		ByScheduler: map[string]SchedulerStats{},
	}
	for typ, q := range b.ready {
		s.TotalReady += q.Len()
		st := s.ByScheduler[typ]
		st.Ready = q.Len()
		s.ByScheduler[typ] = st
	}
	for _, u := range b.unack {
		st := s.ByScheduler[u.eval.Type]
		st.Unacked++
		s.ByScheduler[u.eval.Type] = st
	}
	for _, q := range b.pending {
		s.TotalJobBlocked += q.Len()
	}
	return s
}
