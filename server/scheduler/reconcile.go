package scheduler

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/structs"
)

// Descriptions set on allocations the scheduler stops.
const (
	DescJobStopped   = "alloc not needed since job was stopped"
	DescGroupRemoved = "alloc not needed since its task group was removed"
	DescScaledDown   = "alloc not needed due to job scale down"
	DescNodeLost     = "alloc is lost since its node is down"
	DescUpdated      = "alloc is being replaced due to a job update"
)

// stop is an allocation the plan stops.
type stop struct {
	alloc        *structs.Allocation
	desc         string
	clientStatus string // "" keeps the client's
}

// placement is an allocation the plan must place.
type placement struct {
	group *structs.TaskGroup
	name  string
	index int
	// previous is the allocation this one replaces in an update ("":
	// none); a sticky ephemeral disk's data follows it on the same node.
	previous string
	// previousNode is its node: a sticky ephemeral disk prefers it.
	previousNode string
	// deploymentID and canary place it in the job's deployment
	// (deployment.go).
	deploymentID string
	canary       bool
}

// reconciliation is the difference between what a job asks for and the
// allocations it has.
type reconciliation struct {
	stops []stop
	place []placement
	// inplace are live allocations of an older job version whose group
	// spec is unchanged: the plan moves them to the job in place
	// (structs.Plan.AppendInPlaceUpdate).
	inplace []*structs.Allocation
	// lostAt is when the first disconnected allocation's window ends
	// (zero: none), for a follow-up evaluation to mark it lost.
	lostAt time.Time
	// healthyAt is when the first replacement of a rolling update that
	// runs but has not run for min_healthy_time yet will have (zero:
	// none): the next batch waits for it.
	healthyAt time.Time
}

// reconcile compares job (nil when purged) with its allocations and the
// nodes they are on. It is pure.
//
// Per group, the allocations that count are the live ones (desired run,
// not finished on the client) and, for batch jobs, those that completed:
// a completed batch allocation is never rerun. Failed and lost ones do
// not count, so their names are placed again (limitReschedules then
// decides when a failed one's replacement may be placed). Live allocations on a down
// or missing node are stopped as lost and replaced; those holding a GPU
// their node reports unhealthy are stopped and replaced (health.go); those whose name index
// is at or past Count (or duplicates a kept name) are stopped, highest
// index first. Those of an older job version are updated (update.go): in
// place when their group spec is unchanged, else stopped and replaced,
// lowest index first, as many at a time as the group's update strategy
// allows (max_parallel). Missing name indexes in [0, Count) are placed,
// lowest first.
func reconcile(job *structs.Job, allocs []*structs.Allocation, nodes map[string]*structs.Node, batch bool, now time.Time) reconciliation {
	return reconcileIn(job, allocs, nodes, batch, now, nil)
}

// reconcileIn is reconcile within the job's deployment d (nil: none;
// deployment.go says how a group follows it). It is pure.
func reconcileIn(job *structs.Job, allocs []*structs.Allocation, nodes map[string]*structs.Node, batch bool, now time.Time, d *structs.Deployment) reconciliation {
	var r reconciliation
	byGroup := map[string][]*structs.Allocation{}
	for _, a := range allocs {
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	if job.Stopped() || job.IsParent() { // a parent is placed through its children
		for _, a := range allocs {
			r.stopUnneeded(a, nodes, DescJobStopped)
		}
		return r
	}
	for _, name := range sortedKeys(byGroup) {
		if job.LookupTaskGroup(name) != nil {
			continue
		}
		for _, a := range byGroup[name] {
			r.stopUnneeded(a, nodes, DescGroupRemoved)
		}
	}
	for _, tg := range job.TaskGroups {
		gd := followDeployment(d, tg, byGroup[tg.Name])
		r.reconcileGroup(job, tg, byGroup[tg.Name], nodes, batch, now, gd)
	}
	return r
}

// stopUnneeded stops a live allocation no longer wanted, as lost if its
// node is gone.
func (r *reconciliation) stopUnneeded(a *structs.Allocation, nodes map[string]*structs.Node, desc string) {
	switch {
	case !live(a):
	case nodeLost(nodes[a.NodeID]):
		r.stops = append(r.stops, stop{alloc: a, desc: desc, clientStatus: structs.AllocClientStatusLost})
	default:
		r.stops = append(r.stops, stop{alloc: a, desc: desc})
	}
}

func (r *reconciliation) reconcileGroup(job *structs.Job, tg *structs.TaskGroup, allocs []*structs.Allocation, nodes map[string]*structs.Node, batch bool, now time.Time, gd groupDeployment) {
	occupied := map[int]bool{}
	var running, canaries []*structs.Allocation
	for _, a := range allocs {
		switch {
		case batch && a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusComplete:
			occupied[a.Index()] = true
		case !live(a):
		case nodeLost(nodes[a.NodeID]) && r.disconnected(a, tg, nodes[a.NodeID], now): // disconnect.go
			if !tg.ReplaceDisconnected() {
				occupied[a.Index()] = true
			}
		case nodeLost(nodes[a.NodeID]):
			r.stops = append(r.stops, stop{alloc: a, desc: DescNodeLost, clientStatus: structs.AllocClientStatusLost})
		case r.stopIfDeviceUnhealthy(a, nodes[a.NodeID]):
		case gd.canaryWait && isCanaryOf(a, gd.id):
			canaries = append(canaries, a) // beside the old ones, no name of their own yet
		default:
			running = append(running, a)
		}
	}
	// Oldest first within a name, so a duplicate loses to the original;
	// a promoted canary wins its name (the old allocation there stops).
	promotedFirst := func(a *structs.Allocation) int {
		if gd.promoted && isCanaryOf(a, gd.id) {
			return 0
		}
		return 1
	}
	slices.SortFunc(running, func(x, y *structs.Allocation) int {
		return cmp.Or(cmp.Compare(x.Index(), y.Index()), cmp.Compare(promotedFirst(x), promotedFirst(y)),
			cmp.Compare(x.CreateIndex, y.CreateIndex), strings.Compare(x.ID, y.ID))
	})
	var extras, kept, destructive []*structs.Allocation
	var place []placement
	for _, a := range running {
		idx := a.Index()
		if idx < 0 || idx >= tg.Count || occupied[idx] {
			extras = append(extras, a)
			continue
		}
		occupied[idx] = true
		kept = append(kept, a)
		switch classifyUpdate(a, job, tg) {
		case updateInPlace:
			r.inplace = append(r.inplace, a)
		case updateDestructive:
			destructive = append(destructive, a)
		}
	}
	replace, healthyAt := rollingBatch(job, tg, batch, allocs, kept, destructive, now)
	if gd.canaryWait || gd.hold {
		replace, healthyAt = nil, time.Time{} // canaries first, or the deployment holds
	}
	if !healthyAt.IsZero() && (r.healthyAt.IsZero() || healthyAt.Before(r.healthyAt)) {
		r.healthyAt = healthyAt
	}
	for _, a := range replace {
		r.stops = append(r.stops, stop{alloc: a, desc: DescUpdated})
		place = append(place, placement{group: tg, name: a.Name, index: a.Index(), deploymentID: gd.id, previous: a.ID, previousNode: a.NodeID})
	}
	for i := len(extras) - 1; i >= 0; i-- {
		desc := DescScaledDown
		if gd.promoted && extras[i].Index() < tg.Count {
			desc = DescUpdated // its name went to a promoted canary
		}
		r.stops = append(r.stops, stop{alloc: extras[i], desc: desc})
	}
	for i := range tg.Count {
		if !occupied[i] {
			place = append(place, placement{group: tg, name: structs.AllocName(job.ID, tg.Name, i), index: i, deploymentID: gd.id})
		}
	}
	for i := range min(gd.wantCanaries, tg.Count) {
		idx := i + len(canaries)
		place = append(place, placement{group: tg, name: structs.AllocName(job.ID, tg.Name, idx%max(tg.Count, 1)), index: idx,
			deploymentID: gd.id, canary: true})
	}
	slices.SortFunc(place, func(x, y placement) int { return cmp.Compare(x.index, y.index) })
	r.place = append(r.place, place...)
}

// live reports whether the allocation is meant to run and has not
// finished: it holds resources and counts towards its group.
func live(a *structs.Allocation) bool {
	return a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus()
}

func nodeLost(n *structs.Node) bool { return n == nil || n.TerminalStatus() }

// outdated reports whether a was placed for an older version of job whose
// group spec differs from tg, so it must be replaced.
func outdated(a *structs.Allocation, job *structs.Job, tg *structs.TaskGroup) bool {
	if a.Job == nil || a.Job.JobModifyIndex >= job.JobModifyIndex {
		return false
	}
	return !groupSpecEqual(a.Job.LookupTaskGroup(tg.Name), tg)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
