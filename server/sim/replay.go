package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// PolicyDefault runs the scheduler without an operator configuration:
// structs.DefaultSchedulerAlgorithm.
const PolicyDefault = "default"

// Policies lists the accepted policies: PolicyDefault, then the scheduler
// algorithms (structs.SchedulerAlgorithms).
var Policies = append([]string{PolicyDefault}, structs.SchedulerAlgorithms...)

// ErrUnknownPolicy is returned for a policy not in Policies.
var ErrUnknownPolicy = errors.New("sim: unknown policy")

// Epoch is the simulated clock's start; it advances one second per
// submitted pod. It stamps allocations and evaluations only: latencies
// are measured with Config.Clock.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Config is one simulation.
type Config struct {
	Nodes []NodeSpec
	// Pods is the workload; Arrivals(Pods, cluster GPUs, Arrival, Seed,
	// Limit) is the order of submission.
	Pods    []PodSpec
	Arrival float64
	Seed    uint64
	Limit   int
	// Policy is one of Policies ("" is PolicyDefault).
	Policy string
	// Logger receives the scheduler's logs (nil: none).
	Logger hclog.Logger
	// Clock times each Process call and the whole run (nil: time.Now).
	Clock func() time.Time
	// JobSize > 1 submits consecutive pods together, as one batch job of
	// up to JobSize allocations (pods of one shape share a task group)
	// with one evaluation: the shape of a training or sweep job of many
	// tasks. Each pod's latency is then its share of the evaluation's
	// Process time.
	JobSize int
}

// Outcome is what became of one submitted pod.
type Outcome struct {
	Pod    PodSpec
	JobID  string
	Placed bool
	// Failed is set when the evaluation recorded failed placements and
	// left a blocked evaluation.
	Failed bool
	NodeID string
	// Latency is the wall time of the scheduler's Process call, plan
	// re-check and writes included.
	Latency time.Duration
}

// replay holds one simulation's state store and scheduler plumbing.
type replay struct {
	store   *state.StateStore
	planner *planner
	logger  hclog.Logger
	clock   func() time.Time
	simTime time.Time
	opts    []scheduler.Option
}

// Run builds the cluster in a fresh state store, submits the pods one at
// a time (job, evaluation, then the real batch scheduler's Process on a
// fresh snapshot) and returns the outcomes and their summary. It stops
// with ctx's error if ctx ends first.
func Run(ctx context.Context, cfg Config) (*Result, []Outcome, error) {
	clock := cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	start := clock()
	policy, err := ParsePolicy(cfg.Policy)
	if err != nil {
		return nil, nil, err
	}
	if len(cfg.Nodes) == 0 {
		return nil, nil, errors.New("simulate: no nodes")
	}
	r, err := newReplay(cfg, clock)
	if err != nil {
		return nil, nil, err
	}
	algorithm, err := r.setPolicy(policy)
	if err != nil {
		return nil, nil, err
	}
	arrivals := Arrivals(cfg.Pods, ClusterGPUs(cfg.Nodes), cfg.Arrival, cfg.Seed, cfg.Limit)
	outcomes := make([]Outcome, 0, len(arrivals))
	size := max(cfg.JobSize, 1)
	for seq := 0; seq*size < len(arrivals); seq++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("simulate: %w", err)
		}
		batch := arrivals[seq*size : min((seq+1)*size, len(arrivals))]
		var err error
		if size == 1 {
			var o Outcome
			o, err = r.submit(batch[0], seq)
			outcomes = append(outcomes, o)
		} else {
			outcomes, err = r.submitBatch(batch, seq, outcomes)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	res, err := r.summarize(cfg, policy, arrivals, outcomes)
	if err != nil {
		return nil, nil, err
	}
	res.Algorithm = algorithm
	res.DurationSeconds = clock().Sub(start).Seconds()
	return res, outcomes, nil
}

// ParsePolicy checks a -policy value; "" is PolicyDefault.
func ParsePolicy(s string) (string, error) {
	if s == "" {
		return PolicyDefault, nil
	}
	for _, p := range Policies {
		if s == p {
			return s, nil
		}
	}
	return "", fmt.Errorf("%w %q (want one of %v)", ErrUnknownPolicy, s, Policies)
}

func newReplay(cfg Config, clock func() time.Time) (*replay, error) {
	store, err := state.NewStateStore()
	if err != nil {
		return nil, fmt.Errorf("state store: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	r := &replay{store: store, logger: logger, clock: clock, simTime: Epoch}
	// One node cache for the whole replay, as a server keeps one for all
	// its workers.
	r.opts = []scheduler.Option{scheduler.WithNow(r.now), scheduler.WithNodeCache(feasible.NewNodeCache())}
	r.planner = &planner{store: store, now: r.now}
	err = store.Write(r.planner.nextIndex(), func(tx *state.Txn) error {
		for _, spec := range cfg.Nodes {
			if err := tx.UpsertNode(Node(spec)); err != nil {
				return fmt.Errorf("node %s: %w", spec.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("register nodes: %w", err)
	}
	return r, nil
}

// setPolicy stores the operator scheduler configuration for policy, as
// `drover operator scheduler set-config` would, and also hands the
// algorithm to the scheduler (WithAlgorithm) so the choice holds whether
// or not the scheduler reads the configuration itself; PolicyDefault
// does neither. It returns the algorithm the scheduler will use.
func (r *replay) setPolicy(policy string) (string, error) {
	if policy != PolicyDefault {
		cfg := &structs.SchedulerConfiguration{SchedulerAlgorithm: policy}
		if err := r.store.SetSchedulerConfig(r.planner.nextIndex(), cfg); err != nil {
			return "", fmt.Errorf("set scheduler configuration: %w", err)
		}
		r.opts = append(r.opts, scheduler.WithAlgorithm(policy))
	}
	cfg, err := r.store.SchedulerConfig()
	if err != nil {
		return "", fmt.Errorf("read scheduler configuration: %w", err)
	}
	return cfg.Algorithm(), nil
}

// now is the simulated clock the scheduler stamps with.
func (r *replay) now() time.Time { return r.simTime }

// evalSpace namespaces the name-based IDs of simulated evaluations, so a
// replay with the same seed breaks score ties the same way.
var evalSpace = uuid.MustParse("0c5b6a52-8d7e-4f3a-b1e9-65766c73696d")

// submit registers the job for pod with its evaluation in one write, as
// the server's Job.Register does, and processes the evaluation.
func (r *replay) submit(pod PodSpec, seq int) (Outcome, error) {
	job := Job(pod, seq)
	latency, err := r.process(job)
	if err != nil {
		return Outcome{}, fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	o := Outcome{Pod: pod, JobID: job.ID, Failed: r.planner.failed, Latency: latency}
	if len(r.planner.committed) > 0 {
		o.Placed = true
		o.NodeID = r.planner.committed[0].NodeID
	}
	if o.Placed == o.Failed {
		return Outcome{}, fmt.Errorf("process pod %s: placed %t and failed %t, want exactly one", pod.Name, o.Placed, o.Failed)
	}
	return o, nil
}

// submitBatch submits pods as one batch job (BatchJob) and appends their
// outcomes to out: in each group, the first pods get the allocations
// placed, in order, and the rest failed.
func (r *replay) submitBatch(pods []PodSpec, seq int, out []Outcome) ([]Outcome, error) {
	job, groupOf := BatchJob(pods, seq)
	latency, err := r.process(job)
	if err != nil {
		return nil, fmt.Errorf("batch %d: %w", seq, err)
	}
	placed := map[string][]string{} // group name -> nodes, in placement order
	for _, a := range r.planner.committed {
		placed[a.TaskGroup] = append(placed[a.TaskGroup], a.NodeID)
	}
	share := latency / time.Duration(len(pods))
	for i, pod := range pods {
		o := Outcome{Pod: pod, JobID: job.ID, Latency: share}
		name := job.TaskGroups[groupOf[i]].Name
		if nodes := placed[name]; len(nodes) > 0 {
			o.Placed, o.NodeID = true, nodes[0]
			placed[name] = nodes[1:]
		} else {
			o.Failed = true
		}
		out = append(out, o)
	}
	return out, nil
}

// process registers job with its evaluation in one write, as the
// server's Job.Register does, and processes the evaluation on a fresh
// snapshot. It returns the wall time of Process.
func (r *replay) process(job *structs.Job) (time.Duration, error) {
	r.simTime = r.simTime.Add(time.Second)
	index := r.planner.nextIndex()
	now := r.simTime.UnixNano()
	eval := &structs.Evaluation{
		ID:             uuid.NewSHA1(evalSpace, []byte(job.ID)).String(),
		Namespace:      job.Namespace,
		Priority:       job.Priority,
		Type:           job.Type,
		TriggeredBy:    structs.EvalTriggerJobRegister,
		JobID:          job.ID,
		JobModifyIndex: index,
		Status:         structs.EvalStatusPending,
		CreateIndex:    index,
		ModifyIndex:    index,
		CreateTime:     now,
		ModifyTime:     now,
	}
	err := r.store.Write(index, func(tx *state.Txn) error {
		if err := tx.UpsertJob(job); err != nil {
			return err
		}
		return tx.UpsertEvals([]*structs.Evaluation{eval})
	})
	if err != nil {
		return 0, fmt.Errorf("register: %w", err)
	}
	snap, err := r.store.Snapshot()
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	sched, err := scheduler.New(structs.JobTypeBatch, r.logger, snap, r.planner, r.opts...)
	if err != nil {
		return 0, fmt.Errorf("new scheduler: %w", err)
	}
	r.planner.reset()
	t0 := r.clock()
	err = sched.Process(eval)
	latency := r.clock().Sub(t0)
	if err != nil {
		return 0, fmt.Errorf("process: %w", err)
	}
	return latency, nil
}
