package scheduler

import (
	"fmt"
	"slices"
	"time"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// placer adds placements to a plan, one at a time, each seeing the
// allocations the plan already stops and places: it orchestrates, and
// each group's feasible.Stack (built in feasible.NewStack, with the
// scheduler's stages from stack.go) decides. It is the feasible.View of
// the plan so far: node usage comes from the state store's usage table
// (one lookup per node), adjusted on the nodes the plan touches.
type placer struct {
	state State
	plan  *structs.Plan
	eval  *structs.Evaluation
	now   func() time.Time
	stack []feasible.StackOption

	stopping  map[string]bool                  // allocation IDs the plan stops
	jobAllocs map[string][]*structs.Allocation // the job's, per node, plan applied
	failedOn  map[string][]string              // nodes where allocations failed, per name
	touched   map[string]*structs.NodeUsage    // usage of nodes the plan changes
	order     []string                         // touched node IDs with a GPU free or part free
	full      []string                         // touched node IDs without
	nodes     map[string]*structs.Node         // touched nodes
	current   *structs.NodeUsage               // the usage row Walk yielded last
	ordered   map[feasible.Order]*stateOrder   // the state's nodes per walk order
	// preemption: placements that fit nowhere may preempt lower-priority
	// allocations (preempt.go).
	preemption bool
	// oversubscribe keeps tasks' memory_max (the operator's
	// MemoryOversubscriptionEnabled); otherwise it is dropped.
	oversubscribe bool
	// held are the nodes whose free GPUs other waiting gangs hold against
	// this job; own is the job's own reservation (reserve.go).
	held    holds
	own     *structs.Reservation
	dropped map[string]bool // groups of gangs held back (gang.go)
	quota   *quotaGate      // the namespace's quota (quota.go)
	queue   *queueGate      // the job's fair-share queue (queue.go)
	errWalk error
}

var _ feasible.View = (*placer)(nil)

// newPlacer returns a placer for plan (of plan.Job), whose stops must all
// be in place; jobAllocs are the job's allocations in state.
func newPlacer(state State, plan *structs.Plan, eval *structs.Evaluation, now func() time.Time, jobAllocs []*structs.Allocation) (*placer, error) {
	p := &placer{
		state: state, plan: plan, eval: eval, now: now,
		stopping:  map[string]bool{},
		jobAllocs: map[string][]*structs.Allocation{},
		touched:   map[string]*structs.NodeUsage{},
		nodes:     map[string]*structs.Node{},
		ordered:   map[feasible.Order]*stateOrder{},
		quota:     newQuotaGate(state, plan, plan.Job),
		queue:     newQueueGate(state, plan, plan.Job),
	}
	cfg, err := Configuration(state)
	if err != nil {
		return nil, err
	}
	p.oversubscribe = cfg.MemoryOversubscriptionEnabled
	for _, stops := range plan.NodeUpdate {
		for _, a := range stops {
			p.stopping[a.ID] = true
		}
	}
	for _, a := range jobAllocs {
		if a.ClientStatus == structs.AllocClientStatusFailed && a.NodeID != "" {
			if p.failedOn == nil {
				p.failedOn = map[string][]string{}
			}
			p.failedOn[a.Name] = append(p.failedOn[a.Name], a.NodeID)
		}
		switch {
		case a.TerminalStatus():
		case p.stopping[a.ID]:
			if err := p.release(a); err != nil {
				return nil, err
			}
		default:
			p.jobAllocs[a.NodeID] = append(p.jobAllocs[a.NodeID], a)
		}
	}
	return p, nil
}

// stopAlloc adds a stop of a (a live allocation of the job, as in state)
// to the plan and frees what it holds for later placements.
func (p *placer) stopAlloc(a *structs.Allocation, desc, clientStatus string) error {
	if p.stopping[a.ID] {
		return nil
	}
	p.plan.AppendStoppedAlloc(a, desc, clientStatus)
	p.stopping[a.ID] = true
	allocs := p.jobAllocs[a.NodeID]
	for i, x := range allocs {
		if x.ID == a.ID {
			p.jobAllocs[a.NodeID] = append(allocs[:i:i], allocs[i+1:]...)
			break
		}
	}
	if a.TerminalStatus() {
		return nil
	}
	return p.release(a)
}

// release takes what a holds off its node's usage.
func (p *placer) release(a *structs.Allocation) error {
	u, err := p.touch(a.NodeID)
	if err != nil || u == nil {
		return err
	}
	u.Add(a, -1)
	u.Refresh(u.Node)
	return nil
}

// place records that the plan places a.
func (p *placer) place(a *structs.Allocation) error {
	p.plan.AppendAlloc(a)
	p.jobAllocs[a.NodeID] = append(p.jobAllocs[a.NodeID], a)
	u, err := p.touch(a.NodeID)
	if err != nil || u == nil {
		return err
	}
	u.Add(a, 1)
	u.Refresh(u.Node)
	return nil
}

// touch returns the plan's own copy of the node's usage, making it on
// first touch; nil for a node the state does not know.
func (p *placer) touch(nodeID string) (*structs.NodeUsage, error) {
	if u, ok := p.touched[nodeID]; ok {
		return u, nil
	}
	u, err := p.state.NodeUsage(nil, nodeID)
	if err != nil {
		return nil, fmt.Errorf("read usage of node %s: %w", nodeID, err)
	}
	if u == nil || u.Node == nil {
		return nil, nil
	}
	u = u.Copy()
	p.touched[nodeID] = u
	p.nodes[nodeID] = u.Node
	p.order = append(p.order, nodeID)
	return u, nil
}

// compact moves touched nodes whose GPUs are all taken to p.full, so that
// walks for GPU asks skip them: a job of thousands of allocations would
// otherwise look at every node it filled, again for every placement.
func (p *placer) compact() {
	kept := p.order[:0]
	for _, id := range p.order {
		if u := p.touched[id]; u.FreeGPUs == 0 && u.MaxFreeCompute == 0 {
			p.full = append(p.full, id)
		} else {
			kept = append(kept, id)
		}
	}
	p.order = kept
}

// Walk implements feasible.View: first the nodes the plan touched (their
// place in the state's order is stale; for a GPU ask, only those with a
// GPU at least partly free), then the state's nodes in order.
func (p *placer) Walk(order feasible.Order, fn func(*structs.Node) bool) error {
	p.compact()
	touched := p.order
	if order.By == feasible.OrderAll || order.Min == 0 {
		touched = append(slices.Clip(p.order), p.full...)
	}
	for _, id := range touched {
		p.current = nil
		if !fn(p.nodes[id]) {
			return nil
		}
	}
	defer func() { p.current = nil }()
	if order.By == feasible.OrderFreeGPUs || order.By == feasible.OrderFreeCompute {
		return p.walkState(order, fn)
	}
	nodes, err := p.state.Nodes(nil)
	if err != nil {
		return fmt.Errorf("read nodes: %w", err)
	}
	for _, n := range nodes {
		if _, ok := p.touched[n.ID]; ok {
			continue
		}
		p.current = nil
		if !fn(n) {
			return nil
		}
	}
	return nil
}

// stateOrder is the state's nodes in one walk order, read as far as walks
// have needed and kept for the placer's life (its snapshot does not
// change). Rows of nodes the plan touched are dropped as walks meet them
// (they stay touched), so a job of thousands of allocations does not step
// over every node it filled, again for every placement.
type stateOrder struct {
	next func() *structs.NodeUsage // nil once the rows are all read
	rows []*structs.NodeUsage
}

// walkState yields the state's nodes in order, less those the plan
// touched (Walk yields them first).
func (p *placer) walkState(order feasible.Order, fn func(*structs.Node) bool) error {
	so := p.ordered[order]
	if so == nil {
		var err error
		so = &stateOrder{}
		switch {
		case order.By == feasible.OrderFreeCompute && order.Emptiest:
			so.next, err = p.state.UsageByFreeComputeDesc(order.Min)
		case order.By == feasible.OrderFreeCompute:
			so.next, err = p.state.UsageByFreeCompute(order.Min)
		case order.Emptiest:
			so.next, err = p.state.UsageByFreeGPUsDesc(order.Min)
		default:
			so.next, err = p.state.UsageByFreeGPUs(order.Min)
		}
		if err != nil {
			return err
		}
		p.ordered[order] = so
	}
	kept := 0 // rows[:kept] are the untouched rows met so far
	for i := 0; ; i++ {
		if i == len(so.rows) {
			so.rows = so.rows[:kept]
			if so.next == nil {
				return nil
			}
			u := so.next()
			if u == nil {
				so.next = nil
				return nil
			}
			so.rows = append(so.rows, u)
			i = kept
		}
		u := so.rows[i]
		if _, ok := p.touched[u.NodeID]; ok {
			continue
		}
		so.rows[kept] = u
		kept++
		p.current = u
		if !fn(u.Node) {
			so.rows = append(so.rows[:kept], so.rows[i+1:]...)
			return nil
		}
	}
}

// Below implements feasible.View: up to limit nodes under the order's
// minimum in state, those nearest to it first, less those the plan
// touched (Walk yields them all).
func (p *placer) Below(order feasible.Order, limit int, fn func(*structs.Node, *structs.NodeUsage)) error {
	visit := func(u *structs.NodeUsage) bool {
		if _, ok := p.touched[u.NodeID]; ok {
			return true
		}
		fn(u.Node, u)
		limit--
		return limit > 0
	}
	var err error
	if order.By == feasible.OrderFreeCompute {
		err = p.state.UsageUnderFreeCompute(order.Min, visit)
	} else {
		err = p.state.UsageUnderFreeGPUs(order.Min, visit)
	}
	// The touched nodes the walk skipped, all GPUs taken.
	for _, id := range p.full {
		if limit <= 0 || order.Min == 0 {
			break
		}
		fn(p.nodes[id], p.touched[id])
		limit--
	}
	return err
}

// Usage implements feasible.View: the node's usage with the plan applied
// (a reservation's hold is the stack's reservation stage).
func (p *placer) Usage(n *structs.Node) *structs.NodeUsage {
	if u, ok := p.touched[n.ID]; ok {
		return u
	}
	if p.current != nil && p.current.NodeID == n.ID {
		return p.current
	}
	u, err := p.state.NodeUsage(nil, n.ID)
	if err != nil && p.errWalk == nil {
		p.errWalk = fmt.Errorf("read usage of node %s: %w", n.ID, err)
	}
	if u == nil {
		return structs.NewNodeUsage(n)
	}
	return u
}

// liveByGroup counts the job's live allocations per group, the plan's
// stops and placements applied.
func (p *placer) liveByGroup() map[string]int {
	out := map[string]int{}
	for _, allocs := range p.jobAllocs {
		for _, a := range allocs {
			out[a.TaskGroup]++
		}
	}
	return out
}

// JobAllocs implements feasible.View.
func (p *placer) JobAllocs(nodeID string) []*structs.Allocation { return p.jobAllocs[nodeID] }

// placeAll places every placement, in order, adding the allocations to
// the plan. It returns, per group, the metric of the first placement that
// failed (later failures of the group are counted in CoalescedFailures
// without being tried: the group only gets harder to place) and how many
// placements were left queued.
func (p *placer) placeAll(job *structs.Job, places []placement) (map[string]*structs.AllocMetric, map[string]int, error) {
	var failed map[string]*structs.AllocMetric
	var queued map[string]int
	if job != nil {
		queued = make(map[string]int, len(job.TaskGroups))
		for _, tg := range job.TaskGroups {
			queued[tg.Name] = 0
		}
	}
	props, err := p.distinctProperties(job)
	if err != nil {
		return nil, nil, err
	}
	picks, err := p.pickDomains(job, places) // network.go
	if err != nil {
		return nil, nil, err
	}
	stacks := map[string]*feasible.Stack{}
	for _, pl := range places {
		if pick := picks[pl.group.Name]; pick != nil && pick.fail != "" && failed[pl.group.Name] == nil {
			if failed == nil {
				failed = map[string]*structs.AllocMetric{}
			}
			failed[pl.group.Name] = &structs.AllocMetric{Gang: pick.fail}
			queued[pl.group.Name]++
			continue
		}
		if m := failed[pl.group.Name]; m != nil {
			m.CoalescedFailures++
			queued[pl.group.Name]++
			continue
		}
		stack, ok := stacks[pl.group.Name]
		if !ok {
			var domain feasible.CandidateFilter
			if pick := picks[pl.group.Name]; pick != nil && pick.filter != nil {
				domain = pick.filter
			}
			if stack, err = p.newStack(job, pl.group, props, domain); err != nil {
				return nil, nil, err
			}
			stacks[pl.group.Name] = stack
		}
		start := p.now()
		stack.Penalize(p.failedOn[pl.name])
		option, metric, err := p.placeOnPrevious(stack, pl) // sticky.go
		var victims []*structs.Allocation
		if option == nil && err == nil {
			option, victims, metric, err = stack.Place(p)
		}
		if err == nil {
			err = p.errWalk
		}
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
		stack.Placed(option.Node)
		if err := p.placePreempting(p.newAlloc(job, pl, option, metric), victims); err != nil {
			return nil, nil, err
		}
	}
	return failed, queued, nil
}

func (p *placer) newAlloc(job *structs.Job, pl placement, option *feasible.Option, metric *structs.AllocMetric) *structs.Allocation {
	now := p.now().UnixNano()
	if !p.oversubscribe && option.Resources != nil {
		for _, tr := range option.Resources.Tasks {
			if tr != nil {
				tr.Memory.MemoryMaxMB = 0 // memory_max is the operator's to allow
			}
		}
	}
	var status *structs.AllocDeploymentStatus
	if pl.canary {
		status = &structs.AllocDeploymentStatus{Canary: true}
	}
	return &structs.Allocation{
		DeploymentID:       pl.deploymentID,
		DeploymentStatus:   status,
		PreviousAllocation: pl.previous,
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
