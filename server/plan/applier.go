package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// Raft commits a message through the log and returns its index once the
// FSM has applied it.
type Raft interface {
	Apply(t structs.MessageType, msg any) (index uint64, err error)
}

// StateSource hands out snapshots of the latest state.
type StateSource interface {
	Snapshot() (*state.StateSnapshot, error)
}

// ErrStopped is returned to a Submit whose context ends before the run
// loop takes the plan (the applier is not running or is busy).
var ErrStopped = errors.New("plan applier not running")

// Option configures an Applier.
type Option func(*Applier)

// WithNow sets the clock used to stamp allocations.
func WithNow(now func() time.Time) Option { return func(a *Applier) { a.now = now } }

// Check re-checks a plan against a snapshot of the latest state and
// returns one verdict per node of the plan, sorted by node ID, as
// Evaluate does.
type Check func(st State, plan *structs.Plan) ([]Verdict, error)

// WithCheck makes the applier re-check plans with c instead of Evaluate:
// the scheduler's test harness wraps Evaluate to refuse nodes at will
// and to record the verdicts. Whatever c returns, an AllAtOnce plan
// commits whole or not at all.
func WithCheck(c Check) Option { return func(a *Applier) { a.check = c } }

// request is a plan waiting for the run loop.
type request struct {
	plan *structs.Plan
	done chan response // buffered: the run loop never blocks on it
}

type response struct {
	result *structs.PlanResult
	err    error
}

// Applier is the leader's single plan applier: plans are re-checked and
// committed one at a time, so no two plans can hand out the same capacity.
type Applier struct {
	raft   Raft
	state  StateSource
	logger hclog.Logger
	now    func() time.Time
	check  Check
	queue  chan *request

	plans, partial, rejected atomic.Uint64
}

// Stats counts the applier's verdicts since it was created. A partial
// commit is a plan with at least one node rejected: some scheduler worked
// from state that another plan had changed under it.
type Stats struct {
	// Plans is how many plans were evaluated.
	Plans uint64
	// PartialCommits is how many of them had a node rejected (whether or
	// not another node of the plan committed).
	PartialCommits uint64
	// RejectedNodes is how many node parts were rejected in all.
	RejectedNodes uint64
}

// Stats returns the counts so far; safe for concurrent use.
func (a *Applier) Stats() Stats {
	return Stats{Plans: a.plans.Load(), PartialCommits: a.partial.Load(), RejectedNodes: a.rejected.Load()}
}

// NewApplier returns an applier; plans are applied only while Run runs.
func NewApplier(raft Raft, st StateSource, logger hclog.Logger, opts ...Option) *Applier {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	a := &Applier{raft: raft, state: st, logger: logger, now: time.Now, check: Evaluate, queue: make(chan *request)}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Submit queues plan for the run loop and waits for its result. It fails
// with ctx's error if ctx ends first; a plan taken by the run loop is
// still applied.
func (a *Applier) Submit(ctx context.Context, plan *structs.Plan) (*structs.PlanResult, error) {
	req := &request{plan: plan, done: make(chan response, 1)}
	select {
	case a.queue <- req:
	case <-ctx.Done():
		return nil, fmt.Errorf("submit plan for eval %s: %w: %w", plan.EvalID, ErrStopped, ctx.Err())
	}
	select {
	case resp := <-req.done:
		return resp.result, resp.err
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for plan of eval %s: %w", plan.EvalID, ctx.Err())
	}
}

// Run applies submitted plans one at a time until ctx is done. The leader
// runs it while it holds leadership.
func (a *Applier) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case req := <-a.queue:
			start := a.now()
			result, err := a.apply(req.plan)
			a.measure("apply", start)
			req.done <- response{result: result, err: err}
		}
	}
}

// apply re-checks plan against a fresh snapshot and commits the nodes
// that still fit in one Raft entry.
func (a *Applier) apply(plan *structs.Plan) (*structs.PlanResult, error) {
	start := a.now()
	snap, err := a.state.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("apply plan for eval %s: %w", plan.EvalID, err)
	}
	snapIndex, err := snap.LatestIndex()
	if err != nil {
		return nil, fmt.Errorf("apply plan for eval %s: %w", plan.EvalID, err)
	}
	verdicts, err := a.check(snap, plan)
	if err != nil {
		return nil, fmt.Errorf("apply plan for eval %s: %w", plan.EvalID, err)
	}
	verdicts = allAtOnce(plan, verdicts)
	a.measure("evaluate", start)
	now := a.now().UnixNano()
	result, allocs, ended := Accept(plan, verdicts, now)
	for _, v := range verdicts {
		if v.Reason != "" {
			a.logger.Debug("plan rejected for node", "eval_id", plan.EvalID, "node_id", v.NodeID, "reason", v.Reason)
		}
	}
	a.plans.Add(1)
	if len(result.RejectedNodes) > 0 {
		result.RefreshIndex = snapIndex
		a.partial.Add(1)
		a.rejected.Add(uint64(len(result.RejectedNodes)))
	}
	req := &structs.ApplyPlanResultsRequest{EvalID: plan.EvalID, PreemptionEvals: preemptionEvals(allocs, now), EvalUpdate: ended}
	req.AllocsStopped, req.AllocsPlaced = onTheWire(plan.Job, verdicts, result)
	if slices.ContainsFunc(req.AllocsPlaced, func(a *structs.Allocation) bool { return a.Job == nil }) {
		req.Job = plan.Job // a plan that only stops writes no job
	}
	// The gang's reservation changes with the plan, unless the plan was
	// all at once and refused.
	if !plan.AllAtOnce || len(result.RejectedNodes) == 0 {
		req.Reservation, req.ReleaseReservation = plan.Reservation, plan.ReleaseReservation
		if plan.Job != nil {
			req.Namespace, req.JobID = plan.Job.Namespace, plan.Job.ID
		}
	}
	msgType := structs.ApplyPlanResultsJobOnceRequestType
	if plan.Deployment != nil || len(plan.DeploymentUpdates) > 0 {
		// A newer type, so that a server that knows no deployments
		// stops rather than drops them.
		msgType = structs.ApplyPlanResultsDeploymentRequestType
		req.Deployment, req.DeploymentUpdates = plan.Deployment, plan.DeploymentUpdates
	}
	if len(allocs) == 0 && req.Reservation == nil && !req.ReleaseReservation && req.EvalUpdate == nil && req.Deployment == nil && len(req.DeploymentUpdates) == 0 {
		result.AllocIndex = snapIndex
		return result, nil
	}
	commit := a.now()
	index, err := a.raft.Apply(msgType, req)
	a.measure("commit", commit)
	if err != nil {
		return nil, fmt.Errorf("commit plan for eval %s: %w", plan.EvalID, err)
	}
	result.AllocIndex = index
	return result, nil
}

// measure records drover.plan.<stage> in milliseconds since start, on
// the applier's clock, in go-metrics' global sinks (as raft reports
// there): apply is a plan from its dequeue to its answer (the Raft commit
// included), evaluate the re-check against a fresh snapshot, commit the
// Raft apply alone.
func (a *Applier) measure(stage string, start time.Time) {
	metrics.AddSample([]string{"plan", stage}, float32(a.now().Sub(start))/float32(time.Millisecond))
}

// preemptionEvals returns one pending evaluation per job whose
// allocations are among the preempted ones, so that each is replaced once
// there is room (its blocked evaluation waits for that).
func preemptionEvals(allocs []*structs.Allocation, now int64) []*structs.Evaluation {
	var out []*structs.Evaluation
	seen := map[[2]string]bool{}
	for _, a := range allocs {
		key := [2]string{a.Namespace, a.JobID}
		if a.PreemptedByAllocation == "" || a.Job == nil || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, &structs.Evaluation{
			ID: structs.GenerateUUID(), Namespace: a.Namespace, Priority: a.Job.Priority, Type: a.Job.Type,
			TriggeredBy: structs.EvalTriggerPreemption, JobID: a.JobID, JobModifyIndex: a.Job.JobModifyIndex,
			Status: structs.EvalStatusPending, CreateTime: now, ModifyTime: now,
		})
	}
	return out
}

// Accept builds the result of committing plan's nodes that verdicts
// accept: copies of their allocations stamped at now (the plan's job
// attached to those without one), in the result and, in node order, in
// allocs to write. A plan committed whole also returns its evaluation's
// end (Plan.EvalUpdate) stamped at now, to write in the same commit, and
// says so in the result. Rejected nodes are listed; RefreshIndex is left
// to the caller.
func Accept(plan *structs.Plan, verdicts []Verdict, now int64) (result *structs.PlanResult, allocs []*structs.Allocation, ended *structs.Evaluation) {
	result = &structs.PlanResult{
		NodeUpdate:        map[string][]*structs.Allocation{},
		NodeAllocation:    map[string][]*structs.Allocation{},
		NodeInPlaceUpdate: map[string][]*structs.Allocation{},
	}
	take := func(into map[string][]*structs.Allocation, node string, from []*structs.Allocation) {
		for _, alloc := range from {
			c := stamp(alloc, plan, now)
			into[node] = append(into[node], c)
			allocs = append(allocs, c)
		}
	}
	for _, v := range verdicts {
		if v.Reason != "" {
			result.RejectedNodes = append(result.RejectedNodes, v.NodeID)
			continue
		}
		take(result.NodeUpdate, v.NodeID, plan.NodeUpdate[v.NodeID])
		take(result.NodeAllocation, v.NodeID, plan.NodeAllocation[v.NodeID])
		take(result.NodeInPlaceUpdate, v.NodeID, plan.NodeInPlaceUpdate[v.NodeID])
	}
	if plan.EvalUpdate != nil && len(result.RejectedNodes) == 0 {
		ended = plan.EvalUpdate.Copy()
		ended.ModifyTime = now
		result.EvalUpdated = true
	}
	return result, allocs, ended
}

// stamp returns a copy of alloc with its times set and the plan's job
// attached if it has none.
func stamp(alloc *structs.Allocation, plan *structs.Plan, now int64) *structs.Allocation {
	c := alloc.Copy()
	c.ModifyTime = now
	if c.CreateTime == 0 {
		c.CreateTime = now
	}
	if c.Job == nil {
		c.Job = plan.Job
	}
	return c
}

// onTheWire returns the accepted allocations as the Raft entry carries
// them, in node order: stops without a Job (each keeps its own in state),
// placements and in-place updates of job without one (they take the
// entry's Job), so that the job is written once per plan, not once per
// allocation.
func onTheWire(job *structs.Job, verdicts []Verdict, result *structs.PlanResult) (stopped, placed []*structs.Allocation) {
	for _, v := range verdicts {
		if v.Reason != "" {
			continue
		}
		for _, a := range result.NodeUpdate[v.NodeID] {
			stopped = append(stopped, withoutJob(a))
		}
		for _, from := range [][]*structs.Allocation{result.NodeAllocation[v.NodeID], result.NodeInPlaceUpdate[v.NodeID]} {
			for _, a := range from {
				if sameJobVersion(a.Job, job) {
					a = withoutJob(a)
				}
				placed = append(placed, a)
			}
		}
	}
	return stopped, placed
}

// withoutJob returns a shallow copy of a without its Job, to encode.
func withoutJob(a *structs.Allocation) *structs.Allocation {
	c := *a
	c.Job = nil
	return &c
}

// sameJobVersion reports whether a and b are the same write of the same
// job, pointers or not: a plan's allocations may hold copies of its job
// (a decoded plan holds one per allocation).
func sameJobVersion(a, b *structs.Job) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || (a.Namespace == b.Namespace && a.ID == b.ID && a.Version == b.Version &&
		a.ModifyIndex == b.ModifyIndex && a.JobModifyIndex == b.JobModifyIndex)
}
