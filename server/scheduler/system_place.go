package scheduler

import (
	"slices"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// systemPlacer runs each group's feasible.Stack on one node at a time and
// sums the verdicts per group, so that every allocation placed, and every
// group that failed, is explained by all the nodes looked at.
type systemPlacer struct {
	*placer
	job    *structs.Job
	stacks map[string]*feasible.Stack
	groups map[string]*groupVerdicts
}

// groupVerdicts sums one group's verdicts over the nodes of an
// evaluation.
type groupVerdicts struct {
	metric    structs.AllocMetric // evaluated, filtered and exhausted nodes
	exhausted int                 // placements that did not fit
	placed    []*structs.Allocation
}

func newSystemPlacer(p *placer, job *structs.Job) *systemPlacer {
	return &systemPlacer{placer: p, job: job, stacks: map[string]*feasible.Stack{}, groups: map[string]*groupVerdicts{}}
}

// selectOn runs np's group stack on np's node alone. The allocation
// skip, when set, is left out of what the node holds: verifying a kept
// allocation asks whether it would be placed there again.
func (sp *systemPlacer) selectOn(np nodePlacement, skip *structs.Allocation) (*feasible.Option, *structs.AllocMetric, error) {
	stack, ok := sp.stacks[np.group.Name]
	if !ok {
		stack = sp.newSystemStack(sp.job, np.group)
		sp.stacks[np.group.Name] = stack
	}
	start := sp.now()
	option, m, err := stack.Select(nodeView{placer: sp.placer, node: np.node, skip: skip})
	if err == nil {
		err = sp.errWalk
	}
	if err != nil {
		return nil, nil, err
	}
	m.AllocationTime = sp.now().Sub(start)
	return option, m, nil
}

// nodeView is the placer's feasible.View narrowed to one node, less the
// allocation skip (nil: none).
type nodeView struct {
	*placer
	node *structs.Node
	skip *structs.Allocation
}

// Below implements feasible.View: Walk yields the one node whatever the
// order, so nothing is below it.
func (nodeView) Below(feasible.Order, int, func(*structs.Node, *structs.NodeUsage)) error {
	return nil
}

// Walk implements feasible.View: the one node, whatever the order.
func (v nodeView) Walk(_ feasible.Order, fn func(*structs.Node) bool) error {
	fn(v.node)
	return nil
}

// Usage implements feasible.View.
func (v nodeView) Usage(n *structs.Node) *structs.NodeUsage {
	u := v.placer.Usage(n)
	if v.skip == nil || v.skip.NodeID != n.ID {
		return u
	}
	u = u.Copy()
	u.Add(v.skip, -1)
	u.Refresh(n)
	return u
}

// JobAllocs implements feasible.View.
func (v nodeView) JobAllocs(nodeID string) []*structs.Allocation {
	allocs := v.placer.JobAllocs(nodeID)
	if v.skip == nil || v.skip.NodeID != nodeID {
		return allocs
	}
	out := make([]*structs.Allocation, 0, len(allocs))
	for _, a := range allocs {
		if a.ID != v.skip.ID {
			out = append(out, a)
		}
	}
	return out
}

// verifyKept stops the kept allocations whose node no longer passes their
// group's filters (a changed constraint or datacenter, a driver gone). A
// kept allocation that passes stays even if the node now looks full: it
// already holds its share; if it runs an older version of the job with
// the same group spec, it is moved to the job's version in place.
func (sp *systemPlacer) verifyKept(verify []nodePlacement) error {
	for _, np := range verify {
		_, m, err := sp.selectOn(np, np.keep)
		if err != nil {
			return err
		}
		sp.verdicts(np.group.Name).addFilters(m)
		switch {
		case m.NodesFiltered > 0:
			if err := sp.stopAlloc(np.keep, DescNodeMismatched, ""); err != nil {
				return err
			}
		case classifyUpdate(np.keep, sp.job, np.group) == updateInPlace:
			sp.plan.AppendInPlaceUpdate(np.keep, sp.job)
		}
	}
	return nil
}

// placeEach places each placement on its node. A node the filters refuse
// is not a failure (the group does not run there); one where the group
// does not fit is.
func (sp *systemPlacer) placeEach(place []nodePlacement) error {
	for _, np := range place {
		option, m, err := sp.selectOn(np, nil)
		if err != nil {
			return err
		}
		// Verifying a kept allocation does not count it again: only a
		// placement goes through the stack's admission gates.
		if option, err = sp.stacks[np.group.Name].Admit(option, nil, m); err != nil {
			return err
		}
		v := sp.verdicts(np.group.Name)
		v.addFilters(m)
		switch {
		case option != nil:
			sp.stacks[np.group.Name].Placed(option.Node)
			a := sp.newAlloc(sp.job, np.placement, option, m)
			if err := sp.place(a); err != nil {
				return err
			}
			v.placed = append(v.placed, a)
		case m.NodesFiltered == 0:
			v.addExhaustion(m)
			v.exhausted++
		}
	}
	return nil
}

func (sp *systemPlacer) verdicts(group string) *groupVerdicts {
	v, ok := sp.groups[group]
	if !ok {
		v = &groupVerdicts{}
		sp.groups[group] = v
	}
	return v
}

// results gives each placed allocation its group's verdicts (with its own
// node's scores and time), and returns per group the verdicts of those
// that failed (CoalescedFailures counts the failed nodes after the first)
// and how many placements are queued.
func (sp *systemPlacer) results() (map[string]*structs.AllocMetric, map[string]int) {
	var failed map[string]*structs.AllocMetric
	var queued map[string]int
	if sp.job != nil {
		queued = make(map[string]int, len(sp.job.TaskGroups))
		for _, tg := range sp.job.TaskGroups {
			queued[tg.Name] = 0
		}
	}
	for _, name := range sortedKeys(sp.groups) {
		v := sp.groups[name]
		for _, a := range v.placed {
			m := v.metric.Copy()
			m.ScoreMetaData, m.AllocationTime = a.Metrics.ScoreMetaData, a.Metrics.AllocationTime
			a.Metrics = m
		}
		if v.exhausted == 0 {
			continue
		}
		if failed == nil {
			failed = map[string]*structs.AllocMetric{}
		}
		m := v.metric.Copy()
		m.CoalescedFailures = v.exhausted - 1
		failed[name] = m
		queued[name] = v.exhausted
	}
	return failed, queued
}

// addFilters adds a one-node metric's evaluation and filter verdicts.
func (v *groupVerdicts) addFilters(m *structs.AllocMetric) {
	v.metric.NodesEvaluated += m.NodesEvaluated
	v.metric.NodesFiltered += m.NodesFiltered
	v.metric.NodesAvailable = addCounts(v.metric.NodesAvailable, m.NodesAvailable)
	v.metric.ClassFiltered = addCounts(v.metric.ClassFiltered, m.ClassFiltered)
	v.metric.ConstraintFiltered = addCounts(v.metric.ConstraintFiltered, m.ConstraintFiltered)
	v.metric.AllocationTime += m.AllocationTime
}

// addExhaustion adds a one-node metric's exhaustion verdicts.
func (v *groupVerdicts) addExhaustion(m *structs.AllocMetric) {
	v.metric.NodesExhausted += m.NodesExhausted
	v.metric.ClassExhausted = addCounts(v.metric.ClassExhausted, m.ClassExhausted)
	v.metric.DimensionExhausted = addCounts(v.metric.DimensionExhausted, m.DimensionExhausted)
	for _, q := range m.QuotaExhausted { // quota.go
		if !slices.Contains(v.metric.QuotaExhausted, q) {
			v.metric.QuotaExhausted = append(v.metric.QuotaExhausted, q)
		}
	}
}

func addCounts(dst, src map[string]int) map[string]int {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]int, len(src))
	}
	for k, n := range src {
		dst[k] += n
	}
	return dst
}
