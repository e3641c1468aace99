package scheduler

import (
	"time"

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
// that keep their name. It also returns when a replacement that runs but
// is not healthy yet will be (zero: none), for a follow-up evaluation. It
// is pure.
func rollingBatch(job *structs.Job, tg *structs.TaskGroup, batch bool, allocs, kept, destructive []*structs.Allocation, now time.Time) ([]*structs.Allocation, time.Time) {
	u := updateStrategy(job, tg, batch)
	if !u.Rolling() || len(destructive) == 0 {
		return destructive, time.Time{}
	}
	flying, healthyAt := inFlight(job, tg, allocs, kept, u.MinHealthyTime, now)
	n := u.MaxParallel - flying
	return destructive[:max(0, min(n, len(destructive)))], healthyAt
}

// inFlight counts tg's names (index below Count) whose replacement by a
// rolling update is not done: a name whose allocation was stopped for an
// update (DescUpdated) is in flight while its live allocation, on job's
// version or about to be moved to it in place, is not yet healthy (a
// replacement of an earlier version still pending counts too), or, when
// it has none, if that stop was for job's version (AllocModifyIndex at or
// past its JobModifyIndex: the replacement failed or was not placed).
// A replacement is healthy once its client reports it running and all
// its tasks have run for minHealthy (at once when the client reports no
// start times). allocs are the group's allocations, kept its live ones
// that keep their name. It also returns the earliest time a running
// replacement becomes healthy (zero: none is waiting for that).
func inFlight(job *structs.Job, tg *structs.TaskGroup, allocs, kept []*structs.Allocation, minHealthy time.Duration, now time.Time) (int, time.Time) {
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
	var earliest time.Time
	for idx, at := range stopped {
		a, ok := live[idx]
		switch {
		case idx < 0 || idx >= tg.Count:
		case !ok:
			if at >= job.JobModifyIndex {
				n++
			}
		case classifyUpdate(a, job, tg) == updateDestructive:
		case a.ClientStatus != structs.AllocClientStatusRunning:
			n++
		case a.DeploymentStatus.IsUnhealthy():
			n++ // never healthy: its deployment fails
		case a.DeploymentStatus.IsHealthy():
		default:
			if h := healthyAt(a, minHealthy); now.Before(h) {
				n++
				if earliest.IsZero() || h.Before(earliest) {
					earliest = h
				}
			}
		}
	}
	return n, earliest
}

// healthyAt is when a running allocation has run for minHealthy: the
// last of its tasks' start times plus minHealthy (zero when the client
// reported none).
func healthyAt(a *structs.Allocation, minHealthy time.Duration) time.Time {
	var last time.Time
	for _, s := range a.TaskStates {
		if s != nil && s.StartedAt.After(last) {
			last = s.StartedAt
		}
	}
	if last.IsZero() {
		return last
	}
	return last.Add(minHealthy)
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
