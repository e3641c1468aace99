package scheduler

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// placer adds placements to a plan, one at a time, each seeing the
// allocations the plan already stops and places.
type placer struct {
	state State
	plan  *structs.Plan
	eval  *structs.Evaluation
	now   func() time.Time

	existing map[string][]*structs.Allocation // per node, non-terminal, from state
	stopping map[string]bool                  // allocation IDs the plan stops
}

func newPlacer(state State, plan *structs.Plan, eval *structs.Evaluation, now func() time.Time) *placer {
	p := &placer{
		state: state, plan: plan, eval: eval, now: now,
		existing: map[string][]*structs.Allocation{},
		stopping: map[string]bool{},
	}
	for _, stops := range plan.NodeUpdate {
		for _, a := range stops {
			p.stopping[a.ID] = true
		}
	}
	return p
}

// proposed implements feasible.Proposed.
func (p *placer) proposed(nodeID string) ([]*structs.Allocation, error) {
	existing, ok := p.existing[nodeID]
	if !ok {
		all, err := p.state.AllocsByNode(nil, nodeID)
		if err != nil {
			return nil, fmt.Errorf("read allocs of node %s: %w", nodeID, err)
		}
		for _, a := range all {
			if !a.TerminalStatus() {
				existing = append(existing, a)
			}
		}
		p.existing[nodeID] = existing
	}
	placed := p.plan.NodeAllocation[nodeID]
	out := make([]*structs.Allocation, 0, len(existing)+len(placed))
	for _, a := range existing {
		if !p.stopping[a.ID] {
			out = append(out, a)
		}
	}
	return append(out, placed...), nil
}

// placeAll places every placement, in order, adding the allocations to
// the plan. It returns, per group, the metric of the first placement that
// failed (later failures of the group are counted in CoalescedFailures
// without being tried: the group only gets harder to place) and how many
// placements were left queued.
func (p *placer) placeAll(job *structs.Job, nodes []*structs.Node, places []placement) (map[string]*structs.AllocMetric, map[string]int, error) {
	var failed map[string]*structs.AllocMetric
	var queued map[string]int
	if job != nil {
		queued = make(map[string]int, len(job.TaskGroups))
		for _, tg := range job.TaskGroups {
			queued[tg.Name] = 0
		}
	}
	stacks := map[string]*feasible.Stack{}
	for _, pl := range places {
		if m := failed[pl.group.Name]; m != nil {
			m.CoalescedFailures++
			queued[pl.group.Name]++
			continue
		}
		stack, ok := stacks[pl.group.Name]
		if !ok {
			stack = feasible.NewStack(job, pl.group, p.eval.ID)
			stack.SetNodes(nodes)
			stacks[pl.group.Name] = stack
		}
		start := p.now()
		option, metric, err := stack.Select(p.proposed)
		if err != nil {
			return nil, nil, err
		}
		metric.AllocationTime = p.now().Sub(start)
		if option == nil {
			if failed == nil {
				failed = map[string]*structs.AllocMetric{}
			}
			failed[pl.group.Name] = metric
			queued[pl.group.Name]++
			continue
		}
		p.plan.AppendAlloc(p.newAlloc(job, pl, option, metric))
	}
	return failed, queued, nil
}

func (p *placer) newAlloc(job *structs.Job, pl placement, option *feasible.Option, metric *structs.AllocMetric) *structs.Allocation {
	now := p.now().UnixNano()
	return &structs.Allocation{
		ID:                 structs.GenerateUUID(),
		Namespace:          job.Namespace,
		EvalID:             p.eval.ID,
		Name:               pl.name,
		NodeID:             option.Node.ID,
		NodeName:           option.Node.Name,
		JobID:              job.ID,
		Job:                job,
		TaskGroup:          pl.group.Name,
		AllocatedResources: option.Resources,
		Metrics:            metric,
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
		CreateTime:         now,
		ModifyTime:         now,
	}
}
