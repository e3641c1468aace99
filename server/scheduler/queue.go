package scheduler

import (
	"fmt"
	"maps"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// queueGate admits GPU placements so that, while GPUs are contended, each
// queue's share of them follows its weight: a queue may always use its
// guaranteed GPUs and never more than its maximum; beyond what it is
// guaranteed, it may hold up to its fair share (the cluster's GPUs times
// its weight over the weights of the queues that hold GPUs or have work
// waiting), and past that only while no other queue waits below its own
// share (idle capacity is lent, not kept idle). GPUs are the dominant
// resource of a GPU job, so the share is counted in GPUs (slices by their
// compute share); placements without GPUs are not held back. Like
// quotaGate, it reads state at the first GPU placement. It is the queue
// admission stage (feasible.Gate) and tells the preemption stage which
// allocations a queue below its guarantee may reclaim.
type queueGate struct {
	st   QueueState
	plan *structs.Plan
	job  *structs.Job

	loaded bool
	queue  *structs.Queue // the job's queue; nil when queues do not apply
	used   float64        // GPUs the queue holds, the plan applied
	fair   float64        // the queue's fair share of the cluster's GPUs
	// starved is another queue that waits below its fair share ("" none).
	starved string
	// queues and usage as read, for reclaiming borrowed guarantees.
	queues map[string]*structs.Queue
	usage  map[string]structs.QueueUsage
}

var _ feasible.Gate = (*queueGate)(nil)

// newQueueGate returns the queue gate for job's placements in plan (job
// nil: every option passes).
func newQueueGate(st QueueState, plan *structs.Plan, job *structs.Job) *queueGate {
	return &queueGate{st: st, plan: plan, job: job}
}

// Admit implements feasible.Gate: the GPUs of the victims of the job's
// own queue are taken off its usage first (they stop with the placement).
func (g *queueGate) Admit(o *feasible.Option, victims []*structs.Allocation, m *structs.AllocMetric) (*feasible.Option, func(), error) {
	if o == nil || g.job == nil || (len(victims) == 0 && gpuShare(o.Resources) == 0) {
		return o, nil, nil
	}
	if err := g.load(); err != nil {
		return nil, nil, err
	}
	if g.queue == nil {
		return o, nil, nil // queues do not apply: nothing counted
	}
	before := g.used
	undo := func() { g.used = before }
	g.credit(victims)
	if admitted := g.admit(o, m); admitted != nil {
		return admitted, undo, nil
	}
	undo()
	return nil, nil, nil
}

// admit returns option when placing it keeps the job's queue within its
// share, and counts it; otherwise it records why in metric's Queue and
// returns nil. The gate is loaded.
func (g *queueGate) admit(option *feasible.Option, metric *structs.AllocMetric) *feasible.Option {
	gpus := gpuShare(option.Resources)
	if gpus == 0 || g.queue == nil {
		return option
	}
	q, after := g.queue, g.used+gpus
	const slack = 1e-9
	switch {
	case q.MaxGPUs > 0 && after > float64(q.MaxGPUs)+slack:
		metric.Queue = fmt.Sprintf("queue %q is at its maximum of %d GPUs (holds %s)", q.Name, q.MaxGPUs, gpuCount(g.used))
		return nil
	case after <= float64(q.GuaranteedGPUs)+slack, after <= g.fair+slack, g.starved == "":
	default:
		metric.Queue = fmt.Sprintf("queue %q holds %s GPUs, its fair share is %s, and queue %q waits below its own",
			q.Name, gpuCount(g.used), gpuCount(g.fair), g.starved)
		return nil
	}
	g.used = after
	return option
}

// load reads (once) the queues, their usage and the cluster's GPUs, and works
// out the job's queue's share.
func (g *queueGate) load() error {
	if g.loaded {
		return nil
	}
	g.loaded = true
	r, plan, job := g.st, g.plan, g.job
	queues, err := r.Queues()
	if err != nil {
		return fmt.Errorf("read queues: %w", err)
	}
	usage, err := r.QueueUsage()
	if err != nil {
		return fmt.Errorf("read queue usage: %w", err)
	}
	total, err := r.ClusterGPUs()
	if err != nil {
		return fmt.Errorf("read cluster GPUs: %w", err)
	}
	name := queueOf(job)
	g.usage, g.queues = maps.Clone(usage), map[string]*structs.Queue{}
	weights, active := 0, map[string]*structs.Queue{}
	for _, q := range queues {
		g.queues[q.Name] = q
		u := usage[q.Name]
		if q.Name == name || u.GPUs > 0 || u.Waiting > 0 {
			active[q.Name] = q
			weights += max(q.Weight, 1)
		}
	}
	g.queue = active[name]
	if g.queue == nil || weights == 0 {
		g.queue = nil
		return nil
	}
	fair := func(q *structs.Queue) float64 {
		return max(float64(total)*float64(max(q.Weight, 1))/float64(weights), float64(q.GuaranteedGPUs))
	}
	g.fair = fair(g.queue)
	g.used = usage[name].GPUs - planStopsGPUs(plan, job)
	for _, q := range active {
		if u := usage[q.Name]; q.Name != name && u.Waiting > 0 && u.GPUs < fair(q) && (g.starved == "" || q.Name < g.starved) {
			g.starved = q.Name
		}
	}
	return nil
}

// reclaims reports whether a placement of job asking gpus may preempt
// victim to get back guaranteed capacity: job's queue stays within its
// guaranteed GPUs with the placement, and victim's queue holds more than
// its own guarantee (it borrowed what it holds), whatever the priorities.
func (g *queueGate) reclaims(gpus float64, victim *structs.Allocation) (bool, error) {
	if err := g.load(); err != nil {
		return false, err
	}
	if g.queue == nil || victim.Job == nil || gpus == 0 || g.used+gpus > float64(g.queue.GuaranteedGPUs)+1e-9 {
		return false, nil
	}
	other := queueOf(victim.Job)
	if other == g.queue.Name || !victim.Job.IsPreemptible() {
		return false, nil
	}
	return g.borrowed(other) >= gpuShare(victim.AllocatedResources)-1e-9, nil
}

// borrowed is how many GPUs the queue holds beyond its guarantee (as
// preemptions so far in this plan leave it).
func (g *queueGate) borrowed(queue string) float64 {
	guaranteed := 0
	if q := g.queues[queue]; q != nil {
		guaranteed = q.GuaranteedGPUs
	}
	return g.usage[queue].GPUs - float64(guaranteed)
}

// reclaimable reports whether the victims that other queues give back
// (those job could not preempt by priority) stay within what each of
// those queues borrowed.
func (g *queueGate) reclaimable(victims []*structs.Allocation) bool {
	job := g.job
	taken := map[string]float64{}
	for _, v := range victims {
		if !structs.CanPreempt(job, v) && v.Job != nil {
			taken[queueOf(v.Job)] += gpuShare(v.AllocatedResources)
		}
	}
	for q, gpus := range taken {
		if gpus > g.borrowed(q)+1e-9 {
			return false
		}
	}
	return true
}

// credit takes off the job's queue's usage what victims of that queue,
// a placement is about to preempt, hold (they stop with it). The gate is
// loaded.
func (g *queueGate) credit(victims []*structs.Allocation) {
	if g.queue == nil {
		return
	}
	for _, v := range victims {
		if v.Job != nil && queueOf(v.Job) == g.queue.Name {
			g.used -= gpuShare(v.AllocatedResources)
		}
	}
}

// preempted takes the victim's GPUs off its queue's usage.
func (g *queueGate) preempted(victim *structs.Allocation) {
	if g.usage == nil || victim.Job == nil {
		return
	}
	q := queueOf(victim.Job)
	u := g.usage[q]
	u.GPUs -= gpuShare(victim.AllocatedResources)
	g.usage[q] = u
}

// mayReclaim reports whether job's queue is below its guarantee, so its
// placements may reclaim borrowed GPUs (reclaims says which).
func (g *queueGate) mayReclaim() (bool, error) {
	if err := g.load(); err != nil {
		return false, err
	}
	return g.queue != nil && g.used < float64(g.queue.GuaranteedGPUs), nil
}

// planStopsGPUs is what the plan's stops of the job's live allocations
// give back (a destructive update replaces allocations within the share
// they held).
func planStopsGPUs(plan *structs.Plan, job *structs.Job) float64 {
	sum := 0.0
	for _, stops := range plan.NodeUpdate {
		for _, a := range stops {
			if a.JobID == job.ID && a.Namespace == job.Namespace && !a.ClientTerminalStatus() {
				sum += gpuShare(a.AllocatedResources)
			}
		}
	}
	return sum
}

// gpuShare is how many GPUs res holds, slices by their compute share.
func gpuShare(res *structs.AllocatedResources) float64 {
	gpus, compute := (&structs.Allocation{AllocatedResources: res}).GPUShape()
	if gpus == 0 {
		return 0
	}
	return float64(gpus) * float64(compute) / structs.WholeGPU
}

func gpuCount(v float64) string { return fmt.Sprintf("%.4g", v) }

// queueOf is the job's queue: its own, or structs.DefaultQueue.
func queueOf(job *structs.Job) string {
	if job.Queue == "" {
		return structs.DefaultQueue
	}
	return job.Queue
}
