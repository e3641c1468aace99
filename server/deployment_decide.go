package server

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/structs"
)

// deploymentAction is what the watcher does to one deployment: nothing
// (nil), a status change (with a revert, or marking the version
// stable), or a promotion.
type deploymentAction struct {
	status, desc string
	promote      bool
	// revertTo is the stable version registered again (auto-revert).
	revertTo   *structs.Job
	markStable bool
}

// decideDeployment is the watcher's pure core: given a running
// deployment, its job (nil when purged), the job's allocations, its
// latest stable version other than the deployment's (nil: none) and the
// time, it says what happens next.
//
//	newer job version                     -> cancelled
//	an allocation of it unhealthy         -> failed (auto_revert: revert to stable)
//	a group past its progress deadline    -> failed (idem)
//	canaries all healthy, auto_promote    -> promote
//	promoted and every group done         -> successful, version stable
func decideDeployment(d *structs.Deployment, job *structs.Job, allocs []*structs.Allocation, stable *structs.Job, now time.Time) *deploymentAction {
	if d.Status != structs.DeploymentStatusRunning {
		return nil
	}
	if job == nil || job.Stopped() || job.Version != d.JobVersion || job.CreateIndex != d.JobCreateIndex {
		desc := structs.DeploymentDescNewerJob
		if job == nil || job.Stopped() {
			desc = structs.DeploymentDescStoppedJob
		}
		return &deploymentAction{status: structs.DeploymentStatusCancelled, desc: desc}
	}
	byGroup := map[string][]*structs.Allocation{}
	for _, a := range allocs {
		if a.DeploymentID == d.ID && a.DeploymentStatus.IsUnhealthy() {
			return failDeployment(d, stable, structs.DeploymentDescFailedAllocations)
		}
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	done := true
	for name, s := range d.TaskGroups {
		groupDone := groupDeployed(d, s, byGroup[name])
		waitsForPromotion := s.DesiredCanaries > 0 && !s.Promoted && healthyCanaries(d, byGroup[name]) >= s.DesiredCanaries
		if !groupDone && !waitsForPromotion && s.ProgressDeadline > 0 && !s.RequireProgressBy.IsZero() && now.After(s.RequireProgressBy) {
			return failDeployment(d, stable, structs.DeploymentDescProgressDeadline)
		}
		done = done && groupDone
	}
	if d.RequiresPromotion() {
		if d.HasAutoPromote() && canariesHealthy(d, byGroup) {
			return &deploymentAction{promote: true}
		}
		return nil
	}
	if done {
		return &deploymentAction{status: structs.DeploymentStatusSuccessful, desc: structs.DeploymentDescSuccessful, markStable: true}
	}
	return nil
}

// failDeployment fails d, rolling back to stable when a group asks for
// auto_revert (Nomad's descriptions).
func failDeployment(d *structs.Deployment, stable *structs.Job, desc string) *deploymentAction {
	act := &deploymentAction{status: structs.DeploymentStatusFailed, desc: desc}
	revert := false
	for _, s := range d.TaskGroups {
		revert = revert || s.AutoRevert
	}
	switch {
	case !revert:
	case stable == nil:
		act.desc += " - no stable job version to auto revert to"
	default:
		act.revertTo = stable
		act.desc += fmt.Sprintf(" - rolling back to job version %d", stable.Version)
	}
	return act
}

// healthyCanaries counts the group's healthy canaries of d.
func healthyCanaries(d *structs.Deployment, allocs []*structs.Allocation) int {
	n := 0
	for _, a := range allocs {
		if a.DeploymentID == d.ID && a.DeploymentStatus.IsCanary() && a.DeploymentStatus.IsHealthy() && a.DesiredStatus == structs.AllocDesiredStatusRun {
			n++
		}
	}
	return n
}

// canariesHealthy reports whether every group wanting canaries has them
// all healthy.
func canariesHealthy(d *structs.Deployment, byGroup map[string][]*structs.Allocation) bool {
	for name, s := range d.TaskGroups {
		if s.DesiredCanaries > 0 && !s.Promoted && healthyCanaries(d, byGroup[name]) < s.DesiredCanaries {
			return false
		}
	}
	return true
}

// groupDeployed reports whether a group of d is done: no live
// allocation of an older version is left and DesiredTotal live ones of
// d's version are healthy (those moved in place, outside the
// deployment, count as healthy).
func groupDeployed(d *structs.Deployment, s *structs.DeploymentState, allocs []*structs.Allocation) bool {
	healthy := 0
	for _, a := range allocs {
		if a.DesiredStatus != structs.AllocDesiredStatusRun || a.ClientTerminalStatus() {
			continue
		}
		if a.Job == nil || a.Job.Version != d.JobVersion {
			return false
		}
		if a.DeploymentID != d.ID || a.DeploymentStatus.IsHealthy() {
			healthy++
		}
	}
	return healthy >= s.DesiredTotal
}
