package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// reservations reads the stored reservations and returns those that hold
// nodes against job's placements, by node ID, and the evaluated job's own
// (nil when it has none; found even when the job is gone, so it can be
// released).
func reservations(s ReservationState, eval *structs.Evaluation, job *structs.Job, now time.Time) (held holds, own *structs.Reservation, err error) {
	all, err := s.Reservations()
	if err != nil {
		return nil, nil, fmt.Errorf("read reservations: %w", err)
	}
	for _, res := range all {
		if (res.Namespace == eval.Namespace || (eval.Namespace == "" && res.Namespace == structs.DefaultNamespace)) && res.JobID == eval.JobID {
			own = res
			continue
		}
		if job == nil {
			continue
		}
		if !res.Holds(job, now) || res.Backfills(job, now) {
			continue
		}
		if held == nil {
			held = holds{}
		}
		for _, id := range res.Nodes {
			if prev, ok := held[id]; !ok || res.Priority > prev.Priority {
				held[id] = res
			}
		}
	}
	return held, own, nil
}

// holds is the reservation stage (feasible.Reservations): the
// reservations that hold nodes against a job's placements, by node ID.
type holds map[string]*structs.Reservation

var _ feasible.Reservations = holds(nil)

// Hold implements feasible.Reservations: on a node a reservation holds,
// as many free GPUs as it counts there are shown as held.
func (h holds) Hold(n *structs.Node, u *structs.NodeUsage) *structs.NodeUsage {
	if r := h[n.ID]; r != nil {
		return u.Hold(r.JobID, r.HeldOn(n.ID))
	}
	return u
}

// reserve returns the reservation a waiting gang of job holds: nodes whose
// GPUs of the name the gang asks add up to gpus, those with most free
// first (then most in all), so it waits on the nodes that will be ready
// soonest. Its expiry is its first creation (own's, if it has one) plus
// timeout. It returns nil when no node has such GPUs. With a network
// level (a required gang network block; "": none) it holds nodes of one
// domain only (inDomain).
func (p *placer) reserve(job *structs.Job, ask *structs.RequestedDevice, gpus int, timeout time.Duration, own *structs.Reservation, level string) (*structs.Reservation, error) {
	vendor, typ, model, err := structs.ParseDeviceName(ask.Name)
	if err != nil {
		return nil, nil
	}
	nodes, err := p.state.Nodes(nil)
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	type candidate struct {
		node        *structs.Node
		free, total int
	}
	var cands []candidate
	for _, n := range nodes {
		if !n.Ready() || n.NodeResources == nil {
			continue
		}
		// The state's usage: the plan holds the gang's dropped placements.
		u, err := p.state.NodeUsage(nil, n.ID)
		if err != nil {
			return nil, fmt.Errorf("read usage of node %s: %w", n.ID, err)
		}
		if u == nil {
			u = structs.NewNodeUsage(n)
		}
		c := candidate{node: n}
		for _, g := range n.NodeResources.Devices {
			if !g.Matches(vendor, typ, model) {
				continue
			}
			for _, inst := range g.Instances {
				if !inst.Healthy {
					continue
				}
				c.total++
				if u.Devices[inst.ID].Free() {
					c.free++
				}
			}
		}
		if c.total > 0 {
			cands = append(cands, c)
		}
	}
	if level != "" {
		cands = inDomain(cands, func(c candidate) (string, int, int) { return c.node.TopologyValue(level), c.free, c.total }, gpus)
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(b.free, a.free), cmp.Compare(b.total, a.total), cmp.Compare(a.node.ID, b.node.ID))
	})
	now := p.now().UnixNano()
	res := &structs.Reservation{Namespace: job.Namespace, JobID: job.ID, Priority: job.Priority, GPUs: gpus, CreateTime: now}
	if own != nil {
		res.CreateTime = own.CreateTime
	}
	res.ExpireTime = res.CreateTime + int64(timeout)
	covered := 0
	res.Counts = map[string]int{}
	for _, c := range cands {
		if covered >= gpus {
			break
		}
		res.Nodes = append(res.Nodes, c.node.ID)
		res.Counts[c.node.ID] = min(c.total, gpus-covered)
		covered += c.total
	}
	if len(res.Nodes) == 0 {
		return nil, nil
	}
	slices.Sort(res.Nodes)
	free := 0
	for _, c := range cands[:len(res.Nodes)] {
		free += c.free
	}
	if res.ReadyAt, err = p.readyAt(res.Nodes, vendor, typ, model, gpus-free); err != nil {
		return nil, err
	}
	return res, nil
}

// readyAt estimates when the nodes will have short more GPUs of the name
// free: the allocations holding them end by their job's max_run_time,
// counted from their first task's start (from now, for one not started);
// it returns 0 when that is not enough (some never end by themselves).
func (p *placer) readyAt(nodeIDs []string, vendor, typ, model string, short int) (int64, error) {
	now := p.now()
	if short <= 0 {
		return now.UnixNano(), nil
	}
	type ending struct {
		at   int64
		gpus int
	}
	var ends []ending
	for _, id := range nodeIDs {
		allocs, err := p.state.AllocsByNode(nil, id)
		if err != nil {
			return 0, fmt.Errorf("read allocs of node %s: %w", id, err)
		}
		for _, a := range allocs {
			gpus := heldGPUs(a, vendor, typ, model)
			if a.TerminalStatus() || gpus == 0 || a.Job == nil || a.Job.MaxRunTime <= 0 {
				continue
			}
			ends = append(ends, ending{at: startedAt(a, now).Add(a.Job.MaxRunTime).UnixNano(), gpus: gpus})
		}
	}
	slices.SortFunc(ends, func(a, b ending) int { return cmp.Compare(a.at, b.at) })
	for _, e := range ends {
		if short -= e.gpus; short <= 0 {
			return e.at, nil
		}
	}
	return 0, nil
}

// heldGPUs counts the GPUs of the name the allocation holds.
func heldGPUs(a *structs.Allocation, vendor, typ, model string) int {
	n := 0
	if a.AllocatedResources == nil {
		return 0
	}
	for _, t := range a.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			if (&structs.NodeDeviceResource{Vendor: d.Vendor, Type: d.Type, Name: d.Name}).Matches(vendor, typ, model) {
				n += len(d.DeviceIDs)
			}
		}
	}
	return n
}

// startedAt is when the allocation's first task started, or now.
func startedAt(a *structs.Allocation, now time.Time) time.Time {
	start := now
	for _, s := range a.TaskStates {
		if s != nil && !s.StartedAt.IsZero() && s.StartedAt.Before(start) {
			start = s.StartedAt
		}
	}
	return start
}

// inDomain keeps the candidates of one network domain: among those whose
// GPUs add up to gpus, the one with the most free (then by name); none
// when no domain is large enough (the gang could never fit in one).
func inDomain[C any](cands []C, of func(C) (domain string, free, total int), gpus int) []C {
	free, total := map[string]int{}, map[string]int{}
	for _, c := range cands {
		d, f, t := of(c)
		if d != "" {
			free[d] += f
			total[d] += t
		}
	}
	best := ""
	for d := range total {
		if total[d] < gpus {
			continue
		}
		if best == "" || free[d] > free[best] || (free[d] == free[best] && d < best) {
			best = d
		}
	}
	return slices.DeleteFunc(cands, func(c C) bool {
		d, _, _ := of(c)
		return best == "" || d != best
	})
}
