// Package schedtest is the scheduler's test harness: a real state store, a
// recording Planner that submits plans to the leader's real plan applier
// (server/plan), which commits them straight to that store, a fixed
// clock, and fixture builders for nodes with simulated GPUs and jobs that
// ask for them.
//
// It is for tests and benchmarks only; production code must not import
// it.
package schedtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/server/plan"
	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// Epoch is the harness clock's starting time.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Harness holds a state store and records what schedulers ask of their
// Planner. It implements scheduler.Planner. Its helpers fail the test on
// any state store error.
type Harness struct {
	t      testing.TB
	State  *state.StateStore
	Logger hclog.Logger

	// Reject, when set, makes the plan applier refuse a node's part of a
	// plan, to exercise partial commits. Set it only while no scheduler
	// runs.
	Reject func(plan *structs.Plan, nodeID string) bool

	applier        *plan.Applier
	mu             sync.Mutex
	index          uint64
	now            time.Time
	plans          []*structs.Plan
	results        []*structs.PlanResult
	updatedEvals   []*structs.Evaluation
	createdEvals   []*structs.Evaluation
	reblockedEvals []*structs.Evaluation
	rejections     []string
}

var (
	_ scheduler.Planner = (*Harness)(nil)
	_ scheduler.State   = (*state.StateSnapshot)(nil)
)

// NewHarness returns a harness with an empty state store, the clock at
// Epoch, and a plan applier that runs until the test ends.
func NewHarness(t testing.TB) *Harness {
	t.Helper()
	s, err := state.NewStateStore()
	if err != nil {
		t.Fatalf("new state store: %v", err)
	}
	h := &Harness{t: t, State: s, Logger: hclog.NewNullLogger(), now: Epoch}
	h.applier = plan.NewApplier(commit{h}, s, nil, plan.WithNow(h.Now), plan.WithCheck(h.check))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.applier.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h
}

// NextIndex returns the next Raft-like index for a write.
func (h *Harness) NextIndex() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.index++
	return h.index
}

// Now returns the harness clock's time.
func (h *Harness) Now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

// Advance moves the harness clock forward.
func (h *Harness) Advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

// Process runs the scheduler for eval's type over a fresh snapshot.
func (h *Harness) Process(eval *structs.Evaluation) error {
	h.t.Helper()
	snap, err := h.State.Snapshot()
	if err != nil {
		h.t.Fatalf("snapshot: %v", err)
	}
	s, err := scheduler.New(eval.Type, h.Logger, snap, h, scheduler.WithNow(h.Now))
	if err != nil {
		return err
	}
	return s.Process(eval)
}

// SubmitPlan implements scheduler.Planner through the leader's real plan
// applier (server/plan): it re-checks each node of the plan against the
// latest state (plan.Evaluate: readiness, structs.AllocsFit, new GPUs
// present and healthy, quotas; in-place updates must still be live) and
// commits the nodes that still fit, or none of an AllAtOnce plan, with
// the gang reservation changes; Reject may refuse more nodes. The commit
// writes the state store directly, as the FSM would apply it. After a
// partial commit the result carries a RefreshIndex; the State returned
// is always a fresh snapshot.
func (h *Harness) SubmitPlan(p *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	result, err := h.applier.Submit(context.Background(), p)
	if err != nil {
		return nil, nil, err
	}
	h.mu.Lock()
	h.plans = append(h.plans, p)
	h.results = append(h.results, result)
	if result.EvalUpdated {
		// The evaluation's end came with the plan: it counts as the
		// update the scheduler did not need to make.
		h.updatedEvals = append(h.updatedEvals, p.EvalUpdate)
	}
	h.mu.Unlock()
	fresh, err := h.State.Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	return result, fresh, nil
}

// check is the applier's re-check: plan.Evaluate, then Reject, recording
// every refusal. It runs on the applier's goroutine while SubmitPlan
// waits, so it may read Reject.
func (h *Harness) check(st plan.State, p *structs.Plan) ([]plan.Verdict, error) {
	verdicts, err := plan.Evaluate(st, p)
	if err != nil {
		return nil, err
	}
	for i, v := range verdicts {
		if h.Reject != nil && h.Reject(p, v.NodeID) {
			verdicts[i].Reason = "rejected by test"
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, v := range verdicts {
		if v.Reason != "" {
			h.rejections = append(h.rejections, fmt.Sprintf("%s: %s", v.NodeID, v.Reason))
		}
	}
	return verdicts, nil
}

// commit is the applier's Raft: it applies the plan's accepted part to
// the state store at the next index, in one transaction, as the FSM
// applies an ApplyPlanResults entry.
type commit struct{ h *Harness }

var _ plan.Raft = commit{}

// Apply implements plan.Raft.
func (c commit) Apply(t structs.MessageType, msg any) (uint64, error) {
	req, ok := msg.(*structs.ApplyPlanResultsRequest)
	if (t != structs.ApplyPlanResultsRequestType && t != structs.ApplyPlanResultsJobOnceRequestType &&
		t != structs.ApplyPlanResultsDeploymentRequestType) || !ok {
		return 0, fmt.Errorf("schedtest: cannot commit message type %d (%T)", t, msg)
	}
	index := c.h.NextIndex()
	err := c.h.State.Write(index, func(tx *state.Txn) error {
		if err := tx.ApplyPlanDeployments(req); err != nil {
			return err
		}
		if err := tx.UpsertPlanAllocs(req); err != nil {
			return err
		}
		evals := req.PreemptionEvals
		if req.EvalUpdate != nil {
			evals = append(slices.Clip(evals), req.EvalUpdate)
		}
		if err := tx.UpsertEvals(evals); err != nil {
			return err
		}
		if req.ReleaseReservation {
			if err := tx.DeleteReservation(req.Namespace, req.JobID); err != nil {
				return err
			}
		}
		if req.Reservation != nil {
			return tx.UpsertReservation(req.Reservation)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("commit plan: %w", err)
	}
	return index, nil
}

// UpdateEval implements scheduler.Planner.
func (h *Harness) UpdateEval(eval *structs.Evaluation) error {
	h.mu.Lock()
	h.updatedEvals = append(h.updatedEvals, eval)
	h.mu.Unlock()
	return h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{eval})
}

// CreateEval implements scheduler.Planner.
func (h *Harness) CreateEval(eval *structs.Evaluation) error {
	h.mu.Lock()
	h.createdEvals = append(h.createdEvals, eval)
	h.mu.Unlock()
	return h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{eval})
}

// ReblockEval implements scheduler.Planner.
func (h *Harness) ReblockEval(eval *structs.Evaluation) error {
	h.mu.Lock()
	h.reblockedEvals = append(h.reblockedEvals, eval)
	h.mu.Unlock()
	return h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{eval})
}

// Plans returns the plans submitted so far.
func (h *Harness) Plans() []*structs.Plan {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.plans)
}

// Results returns the plan results returned so far.
func (h *Harness) Results() []*structs.PlanResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.results)
}

// UpdatedEvals returns the evaluations passed to UpdateEval so far.
func (h *Harness) UpdatedEvals() []*structs.Evaluation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.updatedEvals)
}

// CreatedEvals returns the evaluations passed to CreateEval so far.
func (h *Harness) CreatedEvals() []*structs.Evaluation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.createdEvals)
}

// ReblockedEvals returns the evaluations passed to ReblockEval so far.
func (h *Harness) ReblockedEvals() []*structs.Evaluation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.reblockedEvals)
}

// Rejections returns "node: reason" for every node part the applier
// refused. A correct scheduler working from fresh state causes none.
func (h *Harness) Rejections() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.rejections)
}
