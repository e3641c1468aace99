package scheduler

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// preemption is one node where a placement fits once victims leave.
type preemption struct {
	node    *structs.Node
	victims []*structs.Allocation
}

// cost orders preemptions, cheapest first: fewer victims, then lower
// priorities, then fewer GPUs taken away, then the node ID.
func (pr *preemption) cost(o *preemption) int {
	sum := func(vs []*structs.Allocation) (prio, gpus int) {
		for _, v := range vs {
			prio += v.Job.Priority
			g, _ := v.GPUShape()
			gpus += g
		}
		return prio, gpus
	}
	pa, ga := sum(pr.victims)
	pb, gb := sum(o.victims)
	return cmp.Or(cmp.Compare(len(pr.victims), len(o.victims)), cmp.Compare(pa, pb), cmp.Compare(ga, gb),
		cmp.Compare(pr.node.ID, o.node.ID))
}

// preempter is the preemption stage (feasible.Preempter) of a job's
// placements, over the placer's view of the plan so far.
type preempter struct {
	p   *placer
	job *structs.Job
}

var _ feasible.Preempter = preempter{}

// Preempt implements feasible.Preempter: it finds, when a placement fits
// nowhere as things are, the node
// where it fits by stopping the smallest set of allocations that it may
// preempt (structs.CanPreempt: other jobs, preemptible, at least
// structs.PreemptionPriorityDelta lower in priority; or, whatever the
// priority, allocations of a queue that borrowed GPUs another queue is
// guaranteed and now asks for: queueGate.reclaims), and places there.
// The victims are stopped in the plan, each marked preempted by the new
// allocation; the plan applier then evaluates their jobs, so they are
// replaced when room comes back. It returns nil when no set of victims
// makes room.
func (pe preempter) Preempt(stack *feasible.Stack) (*feasible.Option, []*structs.Allocation, error) {
	p, job := pe.p, pe.job
	below, err := p.anyBelow(job.Priority - structs.PreemptionPriorityDelta)
	if err != nil {
		return nil, nil, err
	}
	reclaim, err := p.queue.mayReclaim()
	if err != nil || (!below && !reclaim) {
		return nil, nil, err
	}
	nodes, err := p.state.Nodes(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("read nodes: %w", err)
	}
	var best *preemption
	for _, n := range nodes {
		if !n.Ready() {
			continue
		}
		pr, err := pe.preemptOn(stack, n)
		if err != nil {
			return nil, nil, err
		}
		if pr != nil && (best == nil || pr.cost(best) < 0) {
			best = pr
		}
	}
	if best == nil {
		return nil, nil, nil
	}
	option := stack.SelectOn(p, best.node, pe.usageWithout(best.node, best.victims))
	if option == nil {
		return nil, nil, fmt.Errorf("preempt on node %s: the placement no longer fits", best.node.ID)
	}
	return option, best.victims, nil
}

// anyBelow reports whether some live allocation has a priority of at most
// prio.
func (p *placer) anyBelow(prio int) (bool, error) {
	if prio < structs.JobMinPriority {
		return false, nil
	}
	counts, err := p.state.LivePriorities()
	if err != nil {
		return false, fmt.Errorf("read live priorities: %w", err)
	}
	for pr, n := range counts {
		if pr <= prio && n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// preemptOn returns the fewest victims on n whose leaving lets the
// placement fit, or nil. Candidates are tried lowest priority first, those
// holding the most GPUs first among equals, until it fits; then each
// victim is given back if the placement still fits without taking it.
func (pe preempter) preemptOn(stack *feasible.Stack, n *structs.Node) (*preemption, error) {
	p, job := pe.p, pe.job
	allocs, err := p.state.AllocsByNode(nil, n.ID)
	if err != nil {
		return nil, fmt.Errorf("read allocs of node %s: %w", n.ID, err)
	}
	gpus := stack.GPUShare()
	var candidates []*structs.Allocation
	for _, a := range allocs {
		if a.TerminalStatus() || p.stopping[a.ID] {
			continue
		}
		ok := structs.CanPreempt(job, a)
		if !ok {
			if ok, err = p.queue.reclaims(gpus, a); err != nil {
				return nil, err
			}
		}
		if ok {
			candidates = append(candidates, a)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	// Lowest priority first; among equals, members of a gang last (taking
	// one may stop its whole gang), then those holding the most GPUs.
	slices.SortFunc(candidates, func(a, b *structs.Allocation) int {
		ga, _ := a.GPUShape()
		gb, _ := b.GPUShape()
		return cmp.Or(cmp.Compare(a.Job.Priority, b.Job.Priority), cmp.Compare(inGang(a), inGang(b)),
			cmp.Compare(gb, ga), cmp.Compare(a.ID, b.ID))
	})
	var victims []*structs.Allocation
	fits := false
	for _, v := range candidates {
		victims = append(victims, v)
		if stack.FitsOn(p, n, pe.usageWithout(n, victims)) {
			fits = true
			break
		}
	}
	if !fits {
		return nil, nil
	}
	// Give back victims the placement does not need, latest first.
	for i := len(victims) - 2; i >= 0; i-- {
		without := slices.Delete(slices.Clone(victims), i, i+1)
		if stack.FitsOn(p, n, pe.usageWithout(n, without)) {
			victims = without
		}
	}
	if !p.queue.reclaimable(victims) {
		return nil, nil
	}
	return &preemption{node: n, victims: victims}, nil
}

// usageWithout is the node's usage (the plan so far applied) less what
// the victims hold; the stack's reservation stage applies to it.
func (pe preempter) usageWithout(n *structs.Node, victims []*structs.Allocation) *structs.NodeUsage {
	u := pe.p.Usage(n).Copy()
	for _, v := range victims {
		u.Add(v, -1)
	}
	u.Refresh(n)
	return u
}

// inGang is 1 for an allocation of a gang group, else 0.
func inGang(a *structs.Allocation) int {
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.Gang != nil {
			return 1
		}
	}
	return 0
}

// gangFallout adds to victims the other live members of every gang that
// the victims leave below its min: a gang runs whole or not at all, so
// what is left of it would hold its GPUs for nothing.
func (p *placer) gangFallout(victims []*structs.Allocation) ([]*structs.Allocation, error) {
	out := victims
	taken := map[string]bool{}
	for _, v := range victims {
		taken[v.ID] = true
	}
	done := map[[2]string]bool{}
	for _, v := range victims {
		key := [2]string{v.Namespace, v.JobID}
		if inGang(v) == 0 || done[key] {
			continue
		}
		done[key] = true
		allocs, err := p.state.AllocsByJob(nil, v.Namespace, v.JobID)
		if err != nil {
			return nil, fmt.Errorf("read allocs of job %s: %w", v.JobID, err)
		}
		left := map[string]int{} // live members per group, victims taken away
		for _, a := range allocs {
			if !a.TerminalStatus() && !p.stopping[a.ID] && !taken[a.ID] {
				left[a.TaskGroup]++
			}
		}
		short := map[string]bool{} // gang names left below a min
		for _, tg := range v.Job.TaskGroups {
			if tg.Gang != nil && left[tg.Name] < tg.Gang.Min-completedIn(v.Job, allocs, tg) {
				short[tg.GangName()] = true
			}
		}
		for _, a := range allocs {
			tg := v.Job.LookupTaskGroup(a.TaskGroup)
			if tg == nil || !short[tg.GangName()] || a.TerminalStatus() || p.stopping[a.ID] || taken[a.ID] {
				continue
			}
			taken[a.ID] = true
			out = append(out, a)
		}
	}
	return out, nil
}

// placePreempting adds the placement a and the stops of the allocations
// it preempts to the plan, with the rest of any gang they break.
func (p *placer) placePreempting(a *structs.Allocation, victims []*structs.Allocation) error {
	victims, err := p.gangFallout(victims)
	if err != nil {
		return err
	}
	for _, v := range victims {
		a.PreemptedAllocations = append(a.PreemptedAllocations, v.ID)
		p.plan.AppendPreemptedAlloc(v, a)
		p.queue.preempted(v)
		p.stopping[v.ID] = true
		if err := p.release(v); err != nil {
			return err
		}
	}
	return p.place(a)
}
