// Package schedtest is the scheduler's test harness: a real state store, a
// recording Planner that applies plans to it the way the leader's plan
// applier would (re-checking every node with structs.AllocsFit), a fixed
// clock, and fixture builders for nodes with simulated GPUs and jobs that
// ask for them.
//
// It is for tests and benchmarks only; production code must not import
// it.
package schedtest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

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
	// plan, to exercise partial commits.
	Reject func(plan *structs.Plan, nodeID string) bool

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

var _ scheduler.Planner = (*Harness)(nil)

// NewHarness returns a harness with an empty state store and the clock at
// Epoch.
func NewHarness(t testing.TB) *Harness {
	t.Helper()
	s, err := state.NewStateStore()
	if err != nil {
		t.Fatalf("new state store: %v", err)
	}
	return &Harness{t: t, State: s, Logger: hclog.NewNullLogger(), now: Epoch}
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

// SubmitPlan implements scheduler.Planner. Like the leader's applier, it
// re-checks each node of the plan against the latest state (readiness,
// structs.AllocsFit, Node.DeviceProblem for new allocations; in-place
// updates must still be live there) and commits only the nodes that
// still fit; if any is refused the result carries a
// RefreshIndex and a fresh snapshot. An AllAtOnce plan commits whole or
// not at all. The plan's gang reservation changes are stored with it.
func (h *Harness) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	snap, err := h.State.Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	result := &structs.PlanResult{NodeUpdate: map[string][]*structs.Allocation{}, NodeAllocation: map[string][]*structs.Allocation{},
		NodeInPlaceUpdate: map[string][]*structs.Allocation{}}
	stopping := map[string]bool{}
	for _, stops := range plan.NodeUpdate {
		for _, a := range stops {
			stopping[a.ID] = true
		}
	}
	nodes := planNodes(plan)
	reasons := make([]string, len(nodes))
	refused := ""
	for i, nodeID := range nodes {
		if h.Reject != nil && h.Reject(plan, nodeID) {
			reasons[i] = "rejected by test"
		} else if reasons[i], err = checkNode(snap, nodeID, plan, stopping); err != nil {
			return nil, nil, err
		}
		if reasons[i] != "" && refused == "" {
			refused = nodeID + ": " + reasons[i]
		}
	}
	var write []*structs.Allocation
	for i, nodeID := range nodes {
		reason := reasons[i]
		if reason == "" && plan.AllAtOnce && refused != "" {
			reason = "plan is all at once and " + refused
		}
		if reason != "" {
			h.mu.Lock()
			h.rejections = append(h.rejections, fmt.Sprintf("%s: %s", nodeID, reason))
			h.mu.Unlock()
			result.RejectedNodes = append(result.RejectedNodes, nodeID)
			continue
		}
		result.NodeUpdate[nodeID] = plan.NodeUpdate[nodeID]
		result.NodeAllocation[nodeID] = plan.NodeAllocation[nodeID]
		result.NodeInPlaceUpdate[nodeID] = plan.NodeInPlaceUpdate[nodeID]
		write = append(write, plan.NodeUpdate[nodeID]...)
		write = append(write, plan.NodeAllocation[nodeID]...)
		write = append(write, plan.NodeInPlaceUpdate[nodeID]...)
	}
	index := h.NextIndex()
	keepReservation := !plan.AllAtOnce || refused == ""
	err = h.State.Write(index, func(tx *state.Txn) error {
		if err := tx.UpsertAllocs(write); err != nil {
			return err
		}
		if keepReservation && plan.ReleaseReservation && plan.Job != nil {
			if err := tx.DeleteReservation(plan.Job.Namespace, plan.Job.ID); err != nil {
				return err
			}
		}
		if keepReservation && plan.Reservation != nil {
			if err := tx.UpsertReservation(plan.Reservation); err != nil {
				return err
			}
		}
		if plan.EvalUpdate != nil && refused == "" {
			result.EvalUpdated = true
			return tx.UpsertEvals([]*structs.Evaluation{plan.EvalUpdate})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("commit plan: %w", err)
	}
	if result.EvalUpdated {
		// The evaluation's end came with the plan: it counts as the
		// update the scheduler did not need to make.
		h.mu.Lock()
		h.updatedEvals = append(h.updatedEvals, plan.EvalUpdate)
		h.mu.Unlock()
	}
	result.AllocIndex = index
	if len(result.RejectedNodes) > 0 {
		result.RefreshIndex = index
	}
	h.mu.Lock()
	h.plans = append(h.plans, plan)
	h.results = append(h.results, result)
	h.mu.Unlock()
	fresh, err := h.State.Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	return result, fresh, nil
}

func planNodes(plan *structs.Plan) []string {
	seen := map[string]bool{}
	for id := range plan.NodeUpdate {
		seen[id] = true
	}
	for id := range plan.NodeAllocation {
		seen[id] = true
	}
	for id := range plan.NodeInPlaceUpdate {
		seen[id] = true
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// checkNode returns why the node's placements in plan do not fit the
// latest state, or "". Stops always fit.
func checkNode(snap *state.StateSnapshot, nodeID string, plan *structs.Plan, stopping map[string]bool) (string, error) {
	if reason, err := checkInPlace(snap, nodeID, plan.NodeInPlaceUpdate[nodeID]); err != nil || reason != "" {
		return reason, err
	}
	placed := plan.NodeAllocation[nodeID]
	if len(placed) == 0 {
		return "", nil
	}
	node, err := snap.NodeByID(nil, nodeID)
	if err != nil {
		return "", fmt.Errorf("read node %s: %w", nodeID, err)
	}
	if node == nil || !node.Ready() {
		return "node not ready", nil
	}
	existing, err := snap.AllocsByNode(nil, nodeID)
	if err != nil {
		return "", fmt.Errorf("read allocs of node %s: %w", nodeID, err)
	}
	updated := map[string]bool{}
	for _, a := range plan.NodeInPlaceUpdate[nodeID] {
		updated[a.ID] = true
	}
	var proposed []*structs.Allocation
	for _, a := range existing {
		if !a.TerminalStatus() && !stopping[a.ID] && !updated[a.ID] {
			proposed = append(proposed, a)
		}
	}
	proposed = append(proposed, placed...)
	proposed = append(proposed, plan.NodeInPlaceUpdate[nodeID]...)
	if fit, dim := structs.AllocsFit(node, proposed); !fit {
		return dim, nil
	}
	for _, a := range placed {
		if p := node.DeviceProblem(a); p != "" {
			return p, nil
		}
	}
	return "", nil
}

// checkInPlace returns why in-place updates on nodeID cannot commit: an
// allocation no longer live there (committing would bring it back).
func checkInPlace(snap *state.StateSnapshot, nodeID string, updates []*structs.Allocation) (string, error) {
	for _, u := range updates {
		a, err := snap.AllocByID(nil, u.ID)
		if err != nil {
			return "", fmt.Errorf("read alloc %s: %w", u.ID, err)
		}
		if a == nil || a.NodeID != nodeID || u.NodeID != nodeID || a.TerminalStatus() {
			return fmt.Sprintf("alloc %s to update in place is not live on the node", u.ID), nil
		}
	}
	return "", nil
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
