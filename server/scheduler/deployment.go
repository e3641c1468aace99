package scheduler

import (
	"time"

	"github.com/droverhq/drover/structs"
)

// Deployments in the reconciler (Nomad's model, structs/deployment.go):
//
//	new job version ──> deploymentFor: a new running Deployment (the
//	                    older active one cancelled), one DeploymentState
//	                    per group with an update strategy
//	      │
//	      v
//	reconcileGroup, per group in the deployment:
//	  canaries wanted, not promoted: place the missing canaries (new
//	      version, same names as old allocations) beside the old ones,
//	      replace nothing
//	  promoted, or no canaries:      promoted canaries take their names
//	      (the old allocations there stop), the rest is replaced
//	      max_parallel at a time as replacements become healthy
//	  paused, failed or cancelled:   replace nothing, place no canary
//
// The watcher (server/deployment_watcher.go) moves the deployment on;
// the scheduler only reads it.

// deploymentFor returns the deployment the job's allocations are
// reconciled in (nil: none, a plain rolling update), whether it is new
// (to create with the plan, if the plan changes something), and the
// status changes of older deployments the plan must write. It is pure.
func deploymentFor(job *structs.Job, latest *structs.Deployment, allocs []*structs.Allocation, now time.Time) (*structs.Deployment, bool, []*structs.DeploymentStatusUpdate) {
	if job == nil || job.Stopped() {
		if latest.Active() {
			return nil, false, []*structs.DeploymentStatusUpdate{{DeploymentID: latest.ID,
				Status: structs.DeploymentStatusCancelled, StatusDescription: structs.DeploymentDescStoppedJob}}
		}
		return nil, false, nil
	}
	if job.Type != structs.JobTypeService {
		return nil, false, nil
	}
	if latest != nil && latest.JobCreateIndex == job.CreateIndex && latest.JobVersion == job.Version {
		return latest, false, nil
	}
	d := newDeployment(job, latest, allocs, now)
	if len(d.TaskGroups) == 0 {
		return nil, false, nil
	}
	var updates []*structs.DeploymentStatusUpdate
	if latest.Active() {
		updates = append(updates, &structs.DeploymentStatusUpdate{DeploymentID: latest.ID,
			Status: structs.DeploymentStatusCancelled, StatusDescription: structs.DeploymentDescNewerJob})
	}
	return d, true, updates
}

// newDeployment is a deployment of the job's version for its groups
// with an update strategy. A group wants canaries only when it has live
// allocations of an older version to replace (the unpromoted canaries
// of the deployment it replaces do not count: they stop).
func newDeployment(job *structs.Job, latest *structs.Deployment, allocs []*structs.Allocation, now time.Time) *structs.Deployment {
	d := structs.NewDeployment(job, now.UnixNano())
	for _, tg := range job.TaskGroups {
		u := updateStrategy(job, tg, false)
		if u == nil {
			continue
		}
		s := &structs.DeploymentState{
			AutoRevert: u.AutoRevert, AutoPromote: u.AutoPromote, ProgressDeadline: u.ProgressDeadline,
			DesiredTotal: tg.Count,
		}
		if u.ProgressDeadline > 0 {
			s.RequireProgressBy = now.Add(u.ProgressDeadline).UTC()
		}
		if u.Canary > 0 && groupUpdating(job, tg, latest, allocs) {
			s.DesiredCanaries = u.Canary
			d.StatusDescription = structs.DeploymentDescRunningNeedsPromotion
			if u.AutoPromote {
				d.StatusDescription = structs.DeploymentDescRunningAutoPromotion
			}
		}
		d.TaskGroups[tg.Name] = s
	}
	return d
}

// groupUpdating reports whether tg has a live allocation of an older
// version that its new spec replaces, other than an unpromoted canary of
// the latest deployment.
func groupUpdating(job *structs.Job, tg *structs.TaskGroup, latest *structs.Deployment, allocs []*structs.Allocation) bool {
	for _, a := range allocs {
		if latest != nil && isCanaryOf(a, latest.ID) {
			if s := latest.TaskGroups[tg.Name]; s == nil || !s.Promoted {
				continue
			}
		}
		if a.TaskGroup == tg.Name && live(a) && outdated(a, job, tg) {
			return true
		}
	}
	return false
}

// groupDeployment is how a group's reconciliation follows its
// deployment.
type groupDeployment struct {
	id string // "" without a deployment
	// canaries wanted and not promoted: the update waits for them.
	canaryWait bool
	// wantCanaries is how many canaries to place now.
	wantCanaries int
	// hold stops all replacement (paused, failed, cancelled).
	hold bool
	// promoted canaries keep their names over the old allocations.
	promoted bool
}

// followDeployment returns how tg follows d.
func followDeployment(d *structs.Deployment, tg *structs.TaskGroup, allocs []*structs.Allocation) groupDeployment {
	if d == nil {
		return groupDeployment{}
	}
	s := d.TaskGroups[tg.Name]
	if s == nil {
		return groupDeployment{}
	}
	g := groupDeployment{id: d.ID, hold: d.Status != structs.DeploymentStatusRunning && d.Status != structs.DeploymentStatusSuccessful}
	if s.DesiredCanaries == 0 {
		return g
	}
	if s.Promoted {
		g.promoted = true
		return g
	}
	g.canaryWait = true
	placed := 0
	for _, a := range allocs {
		if a.DeploymentID == d.ID && a.DeploymentStatus.IsCanary() {
			placed++
		}
	}
	if !g.hold {
		g.wantCanaries = max(0, s.DesiredCanaries-placed)
	}
	return g
}

// isCanaryOf reports whether a is a canary placed for deployment id.
func isCanaryOf(a *structs.Allocation, id string) bool {
	return id != "" && a.DeploymentID == id && a.DeploymentStatus.IsCanary()
}

// hasDeploymentWork reports whether the reconciliation changes a group
// of d: a placement, a replacement or an in-place update.
func hasDeploymentWork(r reconciliation, d *structs.Deployment) bool {
	if len(r.inplace) > 0 {
		return true
	}
	for _, p := range r.place {
		if d.TaskGroups[p.group.Name] != nil {
			return true
		}
	}
	for _, s := range r.stops {
		if s.desc == DescUpdated {
			return true
		}
	}
	return false
}
