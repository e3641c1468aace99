package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/droverhq/drover/structs"
)

// gangMember is one group of a gang, with what the plan did for it.
type gangMember struct {
	group *structs.TaskGroup
	// need is how many of the group's allocations must be live once the
	// plan commits: the gang's min, less those that already completed.
	need int
	// have is how many are live with the plan applied, of which placed
	// are the plan's new placements.
	have, placed int
}

// enforceGangs makes the plan's placements for every gang of the job all
// or nothing: when some group of a gang would not reach its min with the
// plan applied, the plan places none of the gang's allocations and each
// of its groups records why (AllocMetric.Gang) and queues them. A plan
// that keeps placements of a gang must commit whole, so it is marked
// AllAtOnce: the applier then refuses it entirely rather than commit part
// of a gang. jobAllocs are the job's allocations in state, terminal ones
// included.
//
// A gang held back reserves the nodes it waits for (reserve), until its
// timeout; a job whose gangs are all placed, or that has none left to
// wait for, releases its reservation.
func (p *placer) enforceGangs(job *structs.Job, jobAllocs []*structs.Allocation, out *outcome) error {
	plan := p.plan
	if job == nil || job.Stop {
		plan.ReleaseReservation = p.own != nil
		return nil
	}
	live := p.liveByGroup()
	gangs := map[string][]*gangMember{}
	var names []string
	for _, tg := range job.TaskGroups {
		name := tg.GangName()
		if name == "" {
			continue
		}
		if _, ok := gangs[name]; !ok {
			names = append(names, name)
		}
		need := tg.Gang.Min - completedIn(job, jobAllocs, tg)
		gangs[name] = append(gangs[name], &gangMember{group: tg, need: need, have: live[tg.Name]})
	}
	if len(gangs) == 0 {
		plan.ReleaseReservation = p.own != nil
		return nil
	}
	for _, placements := range plan.NodeAllocation {
		for _, a := range placements {
			for _, m := range gangs[groupGang(job, a.TaskGroup)] {
				if m.group.Name == a.TaskGroup {
					m.placed++
				}
			}
		}
	}
	slices.Sort(names)
	waiting := &gangWait{}
	for _, name := range names {
		members := gangs[name]
		placed, short := 0, ""
		for _, m := range members {
			placed += m.placed
			if m.have < m.need && short == "" {
				short = fmt.Sprintf("gang %q: group %q would have %d of the %d allocations it needs together; nothing of the gang is placed until all fit",
					name, m.group.Name, m.have, m.need)
			}
		}
		switch {
		case short == "":
			if placed > 0 {
				plan.AllAtOnce = true
			}
		default:
			waiting.add(members)
			dropGang(plan, members, short, out)
			for _, m := range members {
				if p.dropped == nil {
					p.dropped = map[string]bool{}
				}
				p.dropped[m.group.Name] = true
			}
		}
	}
	return p.holdForGangs(job, waiting, out)
}

// droppedGangGroups are the groups of gangs enforceGangs held back.
func (p *placer) droppedGangGroups() map[string]bool { return p.dropped }

// keepGangFailures copies, from the first pass's outcome, the failures
// and queued counts of the groups a second pass left out (their gang
// waits), so the evaluation still says why and how many.
func (out *outcome) keepGangFailures(first *outcome, groups map[string]bool) {
	for g := range groups {
		if m := first.failed[g]; m != nil {
			if out.failed == nil {
				out.failed = map[string]*structs.AllocMetric{}
			}
			out.failed[g] = m
		}
		if out.queued == nil {
			out.queued = map[string]int{}
		}
		out.queued[g] = first.queued[g]
	}
}

// gangWait sums what the job's waiting gangs still need: GPUs, the first
// GPU request (whose name the reservation matches) and the longest
// timeout.
type gangWait struct {
	gpus    int
	ask     *structs.RequestedDevice
	timeout time.Duration
	groups  []string
	// level is the network level a required gang network block keeps
	// the gang within ("": none); the reservation stays in one domain.
	level string
}

func (w *gangWait) add(members []*gangMember) {
	for _, m := range members {
		missing := max(m.need-(m.have-m.placed), 0)
		w.groups = append(w.groups, m.group.Name)
		w.timeout = max(w.timeout, m.group.Gang.Timeout)
		if n := m.group.Gang.Network; n.Required() && w.level == "" {
			w.level = n.Level
		}
		for _, t := range m.group.Tasks {
			if t.Resources == nil {
				continue
			}
			for _, d := range t.Resources.Devices {
				if _, typ, _, err := structs.ParseDeviceName(d.Name); err != nil || typ != "gpu" {
					continue
				}
				if w.ask == nil {
					w.ask = d
				}
				w.gpus += missing * int(max(d.Count, 1))
			}
		}
	}
}

// holdForGangs stores (or refreshes) the reservation of the job's waiting
// gangs, or releases it when none waits or its time is up; the waiting
// groups' metrics say which.
func (p *placer) holdForGangs(job *structs.Job, w *gangWait, out *outcome) error {
	if w.gpus == 0 || w.ask == nil {
		p.plan.ReleaseReservation = p.own != nil
		return nil
	}
	if p.own != nil && !p.own.Live(p.now()) {
		// The expired row stays (it holds nothing) until the gang is
		// placed or its job stops, so the gang does not reserve again.
		for _, g := range w.groups {
			out.failed[g].Gang += fmt.Sprintf(" (its reservation expired after %v; waiting without one)", w.timeout)
		}
		return nil
	}
	for _, g := range w.groups {
		if m := out.failed[g]; len(m.QuotaExhausted) > 0 || m.Queue != "" {
			// Short of quota or queue share, not of GPUs: holding nodes
			// would only keep them from others.
			p.plan.ReleaseReservation = p.own != nil
			return nil
		}
	}
	res, err := p.reserve(job, w.ask, w.gpus, w.timeout, p.own, w.level)
	if err != nil || res == nil {
		return err
	}
	if p.own == nil || !slices.Equal(p.own.Nodes, res.Nodes) || !maps.Equal(p.own.Counts, res.Counts) ||
		p.own.GPUs != res.GPUs || p.own.ReadyAt != res.ReadyAt {
		p.plan.Reservation = res // else the stored one holds as it is
	}
	for _, g := range w.groups {
		out.failed[g].Gang += fmt.Sprintf(" (holding %d node(s) for %d GPUs until %s)", len(res.Nodes), res.GPUs,
			time.Unix(0, res.ExpireTime).UTC().Format(time.RFC3339))
	}
	return nil
}

// dropGang takes the gang's placements, and the preemptions they would
// have made, out of the plan and records why in each member group's
// failure metric, queuing them.
func dropGang(plan *structs.Plan, members []*gangMember, why string, out *outcome) {
	inGang := map[string]bool{}
	for _, m := range members {
		inGang[m.group.Name] = true
	}
	dropped := map[string]bool{}
	for nodeID, placements := range plan.NodeAllocation {
		kept := slices.DeleteFunc(placements, func(a *structs.Allocation) bool {
			if inGang[a.TaskGroup] {
				dropped[a.ID] = true
			}
			return inGang[a.TaskGroup]
		})
		if len(kept) == 0 {
			delete(plan.NodeAllocation, nodeID)
		} else {
			plan.NodeAllocation[nodeID] = kept
		}
	}
	// What the dropped placements would have preempted or replaced (a
	// rolling update's stop) stays.
	for nodeID, stops := range plan.NodeUpdate {
		kept := slices.DeleteFunc(stops, func(a *structs.Allocation) bool {
			return dropped[a.PreemptedByAllocation] || (inGang[a.TaskGroup] && a.DesiredDescription == DescUpdated)
		})
		if len(kept) == 0 {
			delete(plan.NodeUpdate, nodeID)
		} else {
			plan.NodeUpdate[nodeID] = kept
		}
	}
	if out.failed == nil {
		out.failed = map[string]*structs.AllocMetric{}
	}
	if out.queued == nil {
		out.queued = map[string]int{}
	}
	for _, m := range members {
		metric := out.failed[m.group.Name]
		if metric == nil {
			metric = &structs.AllocMetric{}
			out.failed[m.group.Name] = metric
		}
		if metric.Gang != "" && metric.Gang != why {
			metric.Gang += "; " + why // e.g. the network domain's reason (network.go)
		} else {
			metric.Gang = why
		}
		out.queued[m.group.Name] += m.placed
	}
}

// groupGang is the gang name of the job's group, "" when none.
func groupGang(job *structs.Job, group string) string {
	if tg := job.LookupTaskGroup(group); tg != nil {
		return tg.GangName()
	}
	return ""
}

// completedIn counts the group's allocations that finished their work,
// as the reconciler counts them: a batch job's, meant to run, complete,
// one per index below the group's count. A stopped or preempted one that
// exited cleanly did not finish its work.
func completedIn(job *structs.Job, allocs []*structs.Allocation, tg *structs.TaskGroup) int {
	if job.Type != structs.JobTypeBatch {
		return 0
	}
	done := map[int]bool{}
	for _, a := range allocs {
		if a.TaskGroup == tg.Name && a.DesiredStatus == structs.AllocDesiredStatusRun &&
			a.ClientStatus == structs.AllocClientStatusComplete && a.Index() >= 0 && a.Index() < tg.Count {
			done[a.Index()] = true
		}
	}
	return len(done)
}
