package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/structs"
)

// Descriptions set on system allocations the scheduler stops.
const (
	DescNodeDrained    = "alloc not needed since its node is draining"
	DescNodeMismatched = "alloc not needed since its node no longer matches the job"
)

// nodePlacement is one task group on one node: an allocation to place
// there, or, when keep is set, a running one that must still pass the
// group's filters there.
type nodePlacement struct {
	placement
	node *structs.Node
	keep *structs.Allocation
}

// systemReconciliation is the difference between what a system job asks
// for (one allocation per group and node) and the allocations it has.
// The embedded reconciliation collects the stops (its place is unused).
type systemReconciliation struct {
	reconciliation
	place  []nodePlacement // per group, in node order
	verify []nodePlacement // allocations kept if their node still matches
	// outdated are the group's allocations whose spec changed, per node,
	// before a rolling update decides how many to replace now.
	outdated []nodePlacement
}

// reconcileSystem compares job (nil when purged) with its allocations and
// every node. It is pure: the filters that decide which nodes match run
// later, on place and verify.
//
// Per group and node, the allocations that count are the live ones and,
// for sysbatch, those that completed with the group's current spec. On a
// down node (or one gone from state) live allocations are stopped as
// lost; on a draining node they are stopped. The oldest live allocation
// is kept (later ones are duplicates and stopped); it is replaced when it
// holds an unhealthy GPU, or when the group's spec changed and the node
// is ready (max_parallel nodes at a time with an update block:
// rollSystemGroup); on a node not ready for new work (ineligible, initializing)
// it is left alone. Otherwise it is verified against the filters (and
// updated in place when of an older job version). A node without a live or completed allocation gets a
// placement, which the filters may refuse (a down node is refused as not
// ready). A Count of 0 stops the group everywhere.
func reconcileSystem(job *structs.Job, allocs []*structs.Allocation, nodes []*structs.Node, sysbatch bool, now time.Time) systemReconciliation {
	var r systemReconciliation
	byID := nodesByID(nodes)
	if job.Stopped() || job.IsParent() { // a parent is placed through its children
		for _, a := range allocs {
			r.stopUnneeded(a, byID, DescJobStopped)
		}
		return r
	}
	byGroup := map[string][]*structs.Allocation{}
	for _, a := range allocs {
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	for _, name := range sortedKeys(byGroup) {
		if job.LookupTaskGroup(name) != nil {
			continue
		}
		for _, a := range byGroup[name] {
			r.stopUnneeded(a, byID, DescGroupRemoved)
		}
	}
	for _, tg := range job.TaskGroups {
		r.reconcileSystemGroup(job, tg, byGroup[tg.Name], nodes, byID, sysbatch, now)
	}
	return r
}

func (r *systemReconciliation) reconcileSystemGroup(job *structs.Job, tg *structs.TaskGroup, allocs []*structs.Allocation,
	nodes []*structs.Node, byID map[string]*structs.Node, sysbatch bool, now time.Time) {
	if tg.Count <= 0 {
		for _, a := range allocs {
			r.stopUnneeded(a, byID, DescScaledDown)
		}
		return
	}
	byNode := map[string][]*structs.Allocation{}
	for _, a := range allocs {
		byNode[a.NodeID] = append(byNode[a.NodeID], a)
	}
	for _, id := range sortedKeys(byNode) {
		if byID[id] != nil {
			continue
		}
		for _, a := range byNode[id] {
			r.stopUnneeded(a, byID, DescNodeLost)
		}
	}
	pl := placement{group: tg, name: structs.AllocName(job.ID, tg.Name, 0)}
	r.outdated = r.outdated[:0]
	for _, n := range nodes {
		r.reconcileSystemNode(job, nodePlacement{placement: pl, node: n}, byNode[n.ID], sysbatch)
	}
	r.rollSystemGroup(job, tg, allocs, byNode, sysbatch, now)
}

// rollSystemGroup replaces the group's outdated allocations: all of them
// without a rolling strategy; with one (update { max_parallel }), at most
// max_parallel nodes at a time, a node's replacement counting until it
// has run for min_healthy_time. The others keep running as they are.
func (r *systemReconciliation) rollSystemGroup(job *structs.Job, tg *structs.TaskGroup, allocs []*structs.Allocation,
	byNode map[string][]*structs.Allocation, sysbatch bool, now time.Time) {
	u := updateStrategy(job, tg, sysbatch)
	allow := len(r.outdated)
	if u.Rolling() {
		flying, healthyAt := systemInFlight(job, tg, byNode, u.MinHealthyTime, now)
		allow = max(0, min(u.MaxParallel-flying, allow))
		r.healthyAt = earliest(r.healthyAt, healthyAt)
	}
	for i, np := range r.outdated {
		if i < allow {
			r.stops = append(r.stops, stop{alloc: np.keep, desc: DescUpdated})
			np.keep = nil
			r.place = append(r.place, np)
		}
	}
}

// systemInFlight counts the group's nodes whose replacement by a rolling
// update is not done: an allocation there was stopped for an update
// (DescUpdated) for job's version, and the node's live allocation on
// job's version is missing, not running, or running for less than
// minHealthy. It also returns when the first of those running will be
// healthy (zero: none).
func systemInFlight(job *structs.Job, tg *structs.TaskGroup, byNode map[string][]*structs.Allocation, minHealthy time.Duration, now time.Time) (int, time.Time) {
	n := 0
	var first time.Time
	for _, allocs := range byNode {
		updated := false
		var current *structs.Allocation
		for _, a := range allocs {
			switch {
			case a.DesiredStatus == structs.AllocDesiredStatusStop && a.DesiredDescription == DescUpdated && a.AllocModifyIndex >= job.JobModifyIndex:
				updated = true
			case live(a) && !outdated(a, job, tg):
				current = a
			}
		}
		switch {
		case !updated:
		case current == nil || current.ClientStatus != structs.AllocClientStatusRunning:
			n++
		default:
			if h := healthyAt(current, minHealthy); now.Before(h) {
				n++
				first = earliest(first, h)
			}
		}
	}
	return n, first
}

// reconcileSystemNode reconciles one group's allocations on one node in
// state.
func (r *systemReconciliation) reconcileSystemNode(job *structs.Job, np nodePlacement, allocs []*structs.Allocation, sysbatch bool) {
	tg, node := np.group, np.node
	var running []*structs.Allocation
	done := false
	for _, a := range allocs {
		switch {
		case sysbatch && completed(a) && !outdated(a, job, tg):
			done = true
		case live(a):
			running = append(running, a)
		}
	}
	// Oldest first, so a duplicate loses to the original.
	slices.SortFunc(running, func(x, y *structs.Allocation) int {
		return cmp.Or(cmp.Compare(x.CreateIndex, y.CreateIndex), strings.Compare(x.ID, y.ID))
	})
	switch {
	case node.TerminalStatus():
		r.stopAll(running, DescNodeLost, structs.AllocClientStatusLost)
		running = nil
	case node.Drain:
		r.stopAll(running, DescNodeDrained, "")
		running = nil
	}
	if len(running) == 0 {
		if !done {
			r.place = append(r.place, np)
		}
		return
	}
	kept := running[0]
	r.stopAll(running[1:], DescScaledDown, "")
	switch {
	case r.stopIfDeviceUnhealthy(kept, node):
		r.place = append(r.place, np)
	case !node.Ready():
		// Ineligible or initializing: existing work stays, as in Nomad.
	case outdated(kept, job, tg):
		np.keep = kept
		r.outdated = append(r.outdated, np) // rollSystemGroup decides
	default:
		np.keep = kept
		r.verify = append(r.verify, np)
	}
}

func (r *systemReconciliation) stopAll(allocs []*structs.Allocation, desc, clientStatus string) {
	for _, a := range allocs {
		r.stops = append(r.stops, stop{alloc: a, desc: desc, clientStatus: clientStatus})
	}
}

// completed reports whether a finished successfully while meant to run.
func completed(a *structs.Allocation) bool {
	return a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusComplete
}

// systemRescheduling is what the reschedule policy made of a system
// reconciliation's placements.
type systemRescheduling struct {
	place   []nodePlacement
	retryAt time.Time
	gaveUp  []string // "name on node N"
}

// limitSystemReschedules applies each group's policy (policyFor with
// fallback) to placements on ready nodes, like limitReschedules but
// counting failures per group and node: every node runs the same
// allocation name. A placement where the group's allocations with its
// current spec failed waits out the delay after the last failure, and is
// dropped once the node used up its attempts. Placements on nodes that
// are not ready pass through (the filters refuse them). It is pure.
func limitSystemReschedules(fallback ReschedulePolicy, job *structs.Job, allocs []*structs.Allocation, place []nodePlacement, now time.Time) systemRescheduling {
	var r systemRescheduling
	if len(place) == 0 {
		return r
	}
	type key struct{ group, node string }
	failures := map[key][]time.Time{}
	for _, a := range allocs {
		if a.ClientStatus != structs.AllocClientStatusFailed {
			continue
		}
		if tg := job.LookupTaskGroup(a.TaskGroup); tg == nil || outdated(a, job, tg) {
			continue
		}
		k := key{a.TaskGroup, a.NodeID}
		failures[k] = append(failures[k], time.Unix(0, a.ModifyTime))
	}
	for _, np := range place {
		times := failures[key{np.group.Name, np.node.ID}]
		if !np.node.Ready() || len(times) == 0 {
			r.place = append(r.place, np)
			continue
		}
		slices.SortFunc(times, time.Time.Compare)
		at, ok := policyFor(np.group, fallback).due(times, now)
		switch {
		case !ok:
			r.gaveUp = append(r.gaveUp, fmt.Sprintf("%s on node %s", np.name, np.node.Name))
		case at.After(now):
			if r.retryAt.IsZero() || at.Before(r.retryAt) {
				r.retryAt = at
			}
		default:
			r.place = append(r.place, np)
		}
	}
	return r
}
