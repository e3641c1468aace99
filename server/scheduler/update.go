package scheduler

import (
	"github.com/droverhq/drover/structs"
)

// How a live allocation of an older job version is brought to the
// current one.
type updateKind int

const (
	updateNone        updateKind = iota // already on the job's version
	updateInPlace                       // group spec unchanged: new Job, same alloc
	updateDestructive                   // group spec changed: stop and replace
)

// classifyUpdate says how a live allocation a of group tg is brought to
// job's version.
func classifyUpdate(a *structs.Allocation, job *structs.Job, tg *structs.TaskGroup) updateKind {
	switch {
	case a.Job == nil || a.Job.JobModifyIndex >= job.JobModifyIndex:
		return updateNone
	case outdated(a, job, tg):
		return updateDestructive
	}
	return updateInPlace
}

// updateStrategy returns the strategy that limits tg's rolling update, or
// nil when its allocations are all replaced at once: batch jobs ignore
// the update block (as Nomad does), and a group without one uses its
// job's.
func updateStrategy(job *structs.Job, tg *structs.TaskGroup, batch bool) *structs.UpdateStrategy {
	if batch || job.Type == structs.JobTypeBatch || job.Type == structs.JobTypeSysBatch {
		return nil
	}
	if tg.Update != nil {
		return tg.Update
	}
	return job.Update
}

// rollingBatch returns the allocations of destructive (live allocations
// of tg that need replacing, lowest index first) to replace now. Without
// a rolling strategy that is all of them; with one, at most MaxParallel
// names of the group may be in flight at a time (see inFlight), so the
// batch is what is left of MaxParallel. kept are tg's live allocations
// that keep their name. It is pure.
func rollingBatch(job *structs.Job, tg *structs.TaskGroup, batch bool, allocs, kept, destructive []*structs.Allocation) []*structs.Allocation {
	u := updateStrategy(job, tg, batch)
	if !u.Rolling() || len(destructive) == 0 {
		return destructive
	}
	n := u.MaxParallel - inFlight(job, tg, allocs, kept)
	return destructive[:max(0, min(n, len(destructive)))]
}

// inFlight counts tg's names (index below Count) whose replacement by a
// rolling update is not done: a name whose allocation was stopped for an
// update (DescUpdated) is in flight while its live allocation, on job's
// version or about to be moved to it in place, is not yet running (a
// replacement of an earlier version still pending counts too), or, when
// it has none, if that stop was for job's version (AllocModifyIndex at or
// past its JobModifyIndex: the replacement failed or was not placed).
// A replacement counts healthy once its client reports it running.
// allocs are the group's allocations, kept its live ones that keep their
// name.
func inFlight(job *structs.Job, tg *structs.TaskGroup, allocs, kept []*structs.Allocation) int {
	stopped := map[int]uint64{} // index: latest AllocModifyIndex of a stop for an update
	for _, a := range allocs {
		if a.DesiredStatus == structs.AllocDesiredStatusStop && a.DesiredDescription == DescUpdated {
			stopped[a.Index()] = max(stopped[a.Index()], a.AllocModifyIndex)
		}
	}
	live := make(map[int]*structs.Allocation, len(kept))
	for _, a := range kept {
		live[a.Index()] = a
	}
	n := 0
	for idx, at := range stopped {
		a, ok := live[idx]
		switch {
		case idx < 0 || idx >= tg.Count:
		case !ok:
			if at >= job.JobModifyIndex {
				n++
			}
		case a.ClientStatus != structs.AllocClientStatusRunning && classifyUpdate(a, job, tg) != updateDestructive:
			n++
		}
	}
	return n
}

// RollingUpdateWaiting reports whether a rolling update of job still has
// allocations to replace: a live allocation of an older version whose
// group changed, in a group whose strategy limits max_parallel. The
// servers evaluate such a job again when one of its replacements starts
// running. It is pure.
func RollingUpdateWaiting(job *structs.Job, allocs []*structs.Allocation) bool {
	if job.Stopped() {
		return false
	}
	for _, a := range allocs {
		tg := job.LookupTaskGroup(a.TaskGroup)
		if tg == nil || !live(a) || !updateStrategy(job, tg, false).Rolling() {
			continue
		}
		if classifyUpdate(a, job, tg) == updateDestructive {
			return true
		}
	}
	return false
}
