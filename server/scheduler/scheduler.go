package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/server/scheduler/frag"
	"github.com/droverhq/drover/structs"
)

// Planner is where a scheduler's decisions go.
type Planner interface {
	// SubmitPlan commits through the leader's plan applier. If
	// result.RefreshIndex != 0, the returned State is a fresh snapshot at
	// >= that index to retry with.
	SubmitPlan(plan *structs.Plan) (*structs.PlanResult, State, error)
	UpdateEval(eval *structs.Evaluation) error
	// CreateEval creates an evaluation, e.g. a blocked one.
	CreateEval(eval *structs.Evaluation) error
	// ReblockEval returns a blocked evaluation that still does not fit to
	// the blocked set.
	ReblockEval(eval *structs.Evaluation) error
}

// Scheduler processes evaluations of one job type.
type Scheduler interface {
	// Process reconciles the evaluation's job and submits the plan. An
	// error means the evaluation should be retried (nacked); placements
	// that do not fit are not errors but a blocked evaluation.
	Process(eval *structs.Evaluation) error
}

// Errors returned by New.
var (
	ErrNotSupported = errors.New("not supported yet")
	ErrUnknownType  = errors.New("unknown job type")
)

// maxPlanAttempts bounds how often one evaluation resubmits after partial
// commits before it is marked failed.
const maxPlanAttempts = 5

// Option configures a scheduler.
type Option func(*config)

type config struct {
	now        func() time.Time
	reschedule map[string]ReschedulePolicy
	algorithm  string
	limit      *int
	nodeCache  *feasible.NodeCache
}

// WithAlgorithm sets the ranking algorithm (feasible.AlgorithmFGD,
// AlgorithmBinpack or AlgorithmSpread), overriding the operator's
// scheduler configuration.
func WithAlgorithm(name string) Option {
	return func(c *config) { c.algorithm = name }
}

// WithPlacementLimit sets how many feasible nodes a placement scores
// before it stops looking (feasible.DefaultLimit by default; 0 scores
// every node).
func WithPlacementLimit(n int) Option {
	return func(c *config) { c.limit = &n }
}

// stackOptions are the feasible.Stack options the configuration sets.
func (c *config) stackOptions() []feasible.StackOption {
	opts := []feasible.StackOption{feasible.WithAlgorithm(c.algorithm)}
	if c.limit != nil {
		opts = append(opts, feasible.WithLimit(*c.limit))
	}
	if c.nodeCache != nil {
		opts = append(opts, feasible.WithNodeCache(c.nodeCache))
	}
	return opts
}

// WithNodeCache shares c between the evaluations of every scheduler
// given it, so a node's filter verdict and device matches for one kind of
// ask are worked out once (see feasible.NodeCache).
func WithNodeCache(c *feasible.NodeCache) Option {
	return func(cfg *config) { cfg.nodeCache = c }
}

// WithNow sets the clock used for allocation and evaluation timestamps and
// placement timings (time.Now by default).
func WithNow(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// New returns the scheduler for jobType ("service", "batch", "system" or
// "sysbatch"). A nil logger logs nowhere.
func New(jobType string, logger hclog.Logger, state State, planner Planner, opts ...Option) (Scheduler, error) {
	switch jobType {
	case structs.JobTypeService, structs.JobTypeBatch:
	case structs.JobTypeSystem, structs.JobTypeSysBatch:
		return NewSystemScheduler(logger, state, planner, jobType == structs.JobTypeSysBatch, opts...), nil
	default:
		return nil, fmt.Errorf("job type %q: %w", jobType, ErrUnknownType)
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
	return &GenericScheduler{
		logger:     logger.Named("scheduler").With("type", jobType),
		state:      state,
		planner:    planner,
		batch:      jobType == structs.JobTypeBatch,
		reschedule: policy,
		now:        cfg.now,
		stack:      cfg.stackOptions(),
	}, nil
}

// GenericScheduler schedules service and batch jobs: every group runs
// Count allocations on nodes chosen by bin-packing. Batch allocations that
// completed are done and count towards Count. Failed allocations are
// replaced as the ReschedulePolicy allows.
type GenericScheduler struct {
	logger     hclog.Logger
	state      State
	planner    Planner
	batch      bool
	reschedule ReschedulePolicy
	now        func() time.Time
	stack      []feasible.StackOption
}

// outcome is what one attempt at an evaluation produced.
type outcome struct {
	snapshotIndex uint64
	failed        map[string]*structs.AllocMetric // per group, nil when all placed
	queued        map[string]int
	committed     bool // the plan was empty or fully committed
	// evalWritten: the plan's commit wrote the evaluation's end
	// (Plan.EvalUpdate), so finish has nothing to write.
	evalWritten bool
	// retryAt is when a delayed reschedule becomes due (zero: none).
	retryAt time.Time
	gaveUp  []string // allocation names not replaced any more
}

// Process implements Scheduler.
func (s *GenericScheduler) Process(eval *structs.Evaluation) error {
	logger := s.logger.With("eval_id", eval.ID, "job_id", eval.JobID)
	var out *outcome
	for attempt := 1; attempt <= maxPlanAttempts; attempt++ {
		var err error
		out, err = s.attempt(eval)
		if err != nil {
			return fmt.Errorf("process eval %s: %w", eval.ID, err)
		}
		if out.committed {
			return s.finish(eval, out)
		}
		logger.Debug("plan partly committed, retrying with fresher state", "attempt", attempt)
	}
	logger.Warn("plan not committed", "attempts", maxPlanAttempts)
	return s.fail(eval, out, fmt.Sprintf("maximum plan attempts reached (%d)", maxPlanAttempts))
}

// attempt reconciles the job against the current state, places what is
// missing, and submits the plan.
func (s *GenericScheduler) attempt(eval *structs.Evaluation) (*outcome, error) {
	index, err := s.state.LatestIndex()
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	job, err := s.state.JobByID(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return nil, fmt.Errorf("read job: %w", err)
	}
	allocs, err := s.state.AllocsByJob(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return nil, fmt.Errorf("read allocs: %w", err)
	}
	nodes, err := allocNodes(s.state, allocs)
	if err != nil {
		return nil, err
	}
	workload, err := s.state.GPUWorkload()
	if err != nil {
		return nil, fmt.Errorf("read gpu workload: %w", err)
	}
	schedConfig, err := Configuration(s.state)
	if err != nil {
		return nil, err
	}

	var latest *structs.Deployment
	if !s.batch {
		if latest, err = s.state.LatestDeploymentByJob(nil, eval.Namespace, eval.JobID); err != nil {
			return nil, fmt.Errorf("read deployment: %w", err)
		}
	}
	dep, isNew, depUpdates := deploymentFor(job, latest, allocs, s.now()) // deployment.go
	in := &placeInput{
		eval: eval, job: job, allocs: allocs, index: index, workload: workload, config: schedConfig,
		rec: reconcileIn(job, allocs, nodes, s.batch, s.now(), dep),
	}
	if isNew && hasDeploymentWork(in.rec, dep) {
		in.deployment, in.deploymentUpdates = dep, depUpdates
	} else if !isNew {
		in.deploymentUpdates = depUpdates
	}
	in.resched = limitReschedules(s.reschedule, job, allocs, in.rec.place, s.now())
	p, out, err := s.placePass(in, nil)
	if err != nil {
		return nil, err
	}
	// A gang held back leaves room its placements took (and the victims
	// they preempted) to the other groups: place them again without it.
	if dropped := p.droppedGangGroups(); len(dropped) > 0 && placesOutside(in.resched.place, dropped) {
		first := out
		if p, out, err = s.placePass(in, dropped); err != nil {
			return nil, err
		}
		out.keepGangFailures(first, dropped)
	}
	if len(out.failed) == 0 && out.retryAt.IsZero() && !p.plan.IsNoOp() {
		// Nothing will be left to do if the plan commits whole: the
		// evaluation's end is written with it (Plan.EvalUpdate).
		e := s.record(eval, out)
		e.Status = structs.EvalStatusComplete
		p.plan.EvalUpdate = e
	}
	if err := submit(s.planner, &s.state, p.plan, out); err != nil {
		return nil, err
	}
	return out, nil
}

// placesOutside reports whether some placement is of a group not in
// groups.
func placesOutside(places []placement, groups map[string]bool) bool {
	return slices.ContainsFunc(places, func(pl placement) bool { return !groups[pl.group.Name] })
}

// earliest returns the earlier of two times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// placeInput is what one attempt places from.
type placeInput struct {
	eval     *structs.Evaluation
	job      *structs.Job
	allocs   []*structs.Allocation
	index    uint64
	workload frag.Workload
	config   *structs.SchedulerConfiguration
	rec      reconciliation
	resched  rescheduling
	// deployment is created with the plan; deploymentUpdates change
	// older deployments' status (deployment.go).
	deployment        *structs.Deployment
	deploymentUpdates []*structs.DeploymentStatusUpdate
}

// placePass builds the plan from the reconciliation and places what it
// asks, less the placements of the skip groups (a gang that waits), then
// holds back gangs that do not fit whole.
func (s *GenericScheduler) placePass(in *placeInput, skip map[string]bool) (*placer, *outcome, error) {
	job := in.job
	plan := &structs.Plan{EvalID: in.eval.ID, Priority: in.eval.Priority, Job: job, SnapshotIndex: in.index}
	if job != nil {
		plan.Priority = job.Priority
	}
	plan.Deployment, plan.DeploymentUpdates = in.deployment, in.deploymentUpdates
	for _, st := range in.rec.stops {
		plan.AppendStoppedAlloc(st.alloc, st.desc, st.clientStatus)
	}
	for _, a := range in.rec.inplace {
		plan.AppendInPlaceUpdate(a, job)
	}
	out := &outcome{snapshotIndex: in.index, retryAt: earliest(earliest(in.resched.retryAt, in.rec.healthyAt), in.rec.lostAt), gaveUp: in.resched.gaveUp}
	p, err := newPlacer(s.state, plan, in.eval, s.now, in.allocs)
	if err != nil {
		return nil, nil, err
	}
	// The operator's algorithm first, so that one set by WithAlgorithm wins.
	p.stack = append([]feasible.StackOption{feasible.WithAlgorithm(in.config.Algorithm())}, s.stack...)
	p.stack = append(p.stack, feasible.WithWorkload(in.workload))
	p.preemption = job != nil && in.config.PreemptionConfig.Enabled(job.Type)
	if p.held, p.own, err = reservations(s.state, in.eval, job, s.now()); err != nil {
		return nil, nil, err
	}
	places := in.resched.place
	if len(skip) > 0 {
		places = slices.DeleteFunc(slices.Clone(places), func(pl placement) bool { return skip[pl.group.Name] })
	}
	if out.failed, out.queued, err = p.placeAll(job, places); err != nil {
		return nil, nil, err
	}
	if err := p.enforceGangs(job, in.allocs, out); err != nil {
		return nil, nil, err
	}
	return p, out, nil
}

// submit submits plan unless it changes nothing and records in out whether
// it fully committed; after a partial commit, *state becomes the fresh
// snapshot the planner returned, to retry with.
func submit(planner Planner, state *State, plan *structs.Plan, out *outcome) error {
	if plan.IsNoOp() {
		out.committed = true
		return nil
	}
	result, fresh, err := planner.SubmitPlan(plan)
	if err != nil {
		return fmt.Errorf("submit plan: %w", err)
	}
	if result != nil && result.RefreshIndex != 0 {
		if fresh != nil {
			*state = fresh
		}
		return nil
	}
	out.committed = true
	out.evalWritten = result != nil && result.EvalUpdated
	return nil
}

// allocNodes returns the nodes the allocations are on, by ID; a node
// missing from state is absent.
func allocNodes(state State, allocs []*structs.Allocation) (map[string]*structs.Node, error) {
	nodes := map[string]*structs.Node{}
	for _, a := range allocs {
		if _, ok := nodes[a.NodeID]; ok || a.NodeID == "" {
			continue
		}
		n, err := state.NodeByID(nil, a.NodeID)
		if err != nil {
			return nil, fmt.Errorf("read node %s: %w", a.NodeID, err)
		}
		if n != nil {
			nodes[a.NodeID] = n
		}
	}
	return nodes, nil
}

func nodesByID(nodes []*structs.Node) map[string]*structs.Node {
	m := make(map[string]*structs.Node, len(nodes))
	for _, n := range nodes {
		m[n.ID] = n
	}
	return m
}
