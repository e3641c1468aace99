package scheduler

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// SystemScheduler schedules system and sysbatch jobs: one allocation of
// every task group on every node that passes the group's filters, nodes
// that join later included. A group's Count only switches it on (1) or
// off (0); Job.Validate refuses more.
//
// Allocations on a node that goes down are lost and not replaced
// elsewhere; the node gets a new one when it is ready again. Those on a
// draining node, or on a node that no longer passes the group's filters,
// are stopped; those on an ineligible node are left alone. A job update
// that changes a group stops its allocations and places new ones on the
// same nodes, all at once; one that leaves the group's spec alone moves
// them to the new version in place.
// A node where the group does not fit is a failed placement: the
// evaluation records why in FailedTGAllocs and a blocked evaluation waits
// for capacity, as for service jobs.
//
// For sysbatch jobs, an allocation that completed is done and not rerun
// (until the group's spec changes). Failed allocations of either type are
// replaced on the same node as the group's reschedule policy allows.
type SystemScheduler struct {
	// generic holds the state, planner, clock, logger and default
	// reschedule policy, and records outcomes (finish, fail) exactly as
	// for service and batch jobs.
	generic  *GenericScheduler
	sysbatch bool
}

var _ Scheduler = (*SystemScheduler)(nil)

// NewSystemScheduler returns the scheduler for system jobs, or for
// sysbatch jobs when sysbatch is set. A nil logger logs nowhere.
func NewSystemScheduler(logger hclog.Logger, state State, planner Planner, sysbatch bool, opts ...Option) *SystemScheduler {
	jobType := structs.JobTypeSystem
	if sysbatch {
		jobType = structs.JobTypeSysBatch
	}
	cfg := config{now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	policy, ok := cfg.reschedule[jobType]
	if !ok {
		policy = DefaultReschedulePolicy(jobType)
	}
	return &SystemScheduler{
		generic: &GenericScheduler{
			logger:     logger.Named("scheduler").With("type", jobType),
			state:      state,
			planner:    planner,
			reschedule: policy,
			now:        cfg.now,
			stack:      cfg.stackOptions(),
		},
		sysbatch: sysbatch,
	}
}

// Process implements Scheduler.
func (s *SystemScheduler) Process(eval *structs.Evaluation) error {
	logger := s.generic.logger.With("eval_id", eval.ID, "job_id", eval.JobID)
	var out *outcome
	for attempt := 1; attempt <= maxPlanAttempts; attempt++ {
		var err error
		out, err = s.attempt(eval)
		if err != nil {
			return fmt.Errorf("process eval %s: %w", eval.ID, err)
		}
		if out.committed {
			return s.generic.finish(eval, out)
		}
		logger.Debug("plan partly committed, retrying with fresher state", "attempt", attempt)
	}
	logger.Warn("plan not committed", "attempts", maxPlanAttempts)
	return s.generic.fail(eval, out, fmt.Sprintf("maximum plan attempts reached (%d)", maxPlanAttempts))
}

// attempt reconciles the job with every node, places what is missing, and
// submits the plan.
func (s *SystemScheduler) attempt(eval *structs.Evaluation) (*outcome, error) {
	g := s.generic
	index, err := g.state.LatestIndex()
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	job, err := g.state.JobByID(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return nil, fmt.Errorf("read job: %w", err)
	}
	allocs, err := g.state.AllocsByJob(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return nil, fmt.Errorf("read allocs: %w", err)
	}
	nodes, err := g.state.Nodes(nil)
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	workload, err := g.state.GPUWorkload()
	if err != nil {
		return nil, fmt.Errorf("read gpu workload: %w", err)
	}

	now := g.now()
	rec := reconcileSystem(job, allocs, nodes, s.sysbatch, now)
	resched := limitSystemReschedules(g.reschedule, job, allocs, rec.place, now)
	plan := &structs.Plan{EvalID: eval.ID, Priority: eval.Priority, Job: job, SnapshotIndex: index}
	if job != nil {
		plan.Priority = job.Priority
	}
	for _, st := range rec.stops {
		plan.AppendStoppedAlloc(st.alloc, st.desc, st.clientStatus)
	}
	out := &outcome{snapshotIndex: index, retryAt: earliest(resched.retryAt, rec.healthyAt), gaveUp: resched.gaveUp}
	p, err := newPlacer(g.state, plan, eval, g.now, allocs)
	if err != nil {
		return nil, err
	}
	// Each Select sees one node: no limit, so it walks that node once, in
	// OrderAll, and every metric counts it the same way.
	p.stack = append(append(p.stack, g.stack...), feasible.WithWorkload(workload), feasible.WithLimit(0))
	sp := newSystemPlacer(p, job)
	if err := sp.verifyKept(rec.verify); err != nil {
		return nil, err
	}
	if err := sp.placeEach(resched.place); err != nil {
		return nil, err
	}
	out.failed, out.queued = sp.results()
	if err := submit(g.planner, &g.state, plan, out); err != nil {
		return nil, err
	}
	return out, nil
}
