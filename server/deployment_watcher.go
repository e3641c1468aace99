package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/droverhq/drover/structs"
)

// The deployment watcher runs on the leader: every
// deploymentWatchInterval it reads the running deployments and applies
// what decideDeployment (deployment_decide.go) says, through Raft:
// a status change (with the auto-revert's job and its evaluation, or
// the version marked stable) or a promotion with the evaluation that
// replaces the old allocations. The clock is the server's (Config.Now
// in tests).

// deploymentWatchInterval is how often the watcher looks.
const deploymentWatchInterval = 500 * time.Millisecond

// watchDeployments runs the watcher until ctx ends.
func (s *Server) watchDeployments(ctx context.Context) {
	t := time.NewTicker(deploymentWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.stepDeployments(s.now()); err != nil {
				s.logger.Warn("deployment watcher", "error", err)
			}
		}
	}
}

// stepDeployments decides and applies the next step of every running
// deployment at now.
func (s *Server) stepDeployments(now time.Time) error {
	st := s.State()
	all, err := st.Deployments(nil, "*", "")
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range all {
		if d.Status != structs.DeploymentStatusRunning {
			continue
		}
		job, err := st.JobByID(nil, d.Namespace, d.JobID)
		if err != nil {
			return err
		}
		allocs, err := st.AllocsByJob(nil, d.Namespace, d.JobID)
		if err != nil {
			return err
		}
		stable, err := s.latestStableVersion(d)
		if err != nil {
			return err
		}
		if act := decideDeployment(d, job, allocs, stable, now); act != nil {
			if err := s.applyDeploymentAction(d, job, act, now); err != nil {
				errs = append(errs, fmt.Errorf("deployment %s: %w", d.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// latestStableVersion is the job's newest stable version older than
// d's, or nil.
func (s *Server) latestStableVersion(d *structs.Deployment) (*structs.Job, error) {
	versions, err := s.State().JobVersions(nil, d.Namespace, d.JobID)
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		if v.Stable && v.Version < d.JobVersion {
			return v, nil
		}
	}
	return nil, nil
}

// applyDeploymentAction commits act through Raft.
func (s *Server) applyDeploymentAction(d *structs.Deployment, job *structs.Job, act *deploymentAction, now time.Time) error {
	if act.promote {
		req := &structs.DeploymentPromoteRequest{DeploymentID: d.ID, All: true, PromotedAt: now.UnixNano()}
		if job != nil {
			req.Eval = newJobEval(job, structs.EvalTriggerDeploymentWatcher, now.UnixNano())
		}
		_, err := s.raftApply(structs.DeploymentPromoteRequestType, req)
		return err
	}
	req := &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: d.ID, Status: act.status, StatusDescription: act.desc},
		MarkStable:       act.markStable,
	}
	if act.revertTo != nil {
		revert := act.revertTo.Copy()
		revert.Stop, revert.SubmitTime = false, now.UnixNano()
		req.Job = revert
		req.Eval = newJobEval(revert, structs.EvalTriggerJobRegister, now.UnixNano())
	}
	if _, err := s.raftApply(structs.DeploymentStatusUpdateRequestType, req); err != nil {
		return err
	}
	s.logger.Info("deployment "+act.status, "deployment_id", d.ID, "job_id", d.JobID, "version", d.JobVersion, "description", act.desc)
	return nil
}

// deploymentHealthEvals returns an evaluation per job with an active
// deployment whose allocation the updates newly mark healthy: a healthy
// replacement frees a slot of max_parallel. Jobs that already get one
// of the evals in have are skipped.
func (s *Server) deploymentHealthEvals(updates []*structs.Allocation, have []*structs.Evaluation, now int64) ([]*structs.Evaluation, error) {
	st := s.State()
	seen := map[[2]string]bool{}
	for _, e := range have {
		seen[[2]string{e.Namespace, e.JobID}] = true
	}
	var evals []*structs.Evaluation
	for _, u := range updates {
		if !u.DeploymentStatus.IsHealthy() {
			continue
		}
		existing, err := st.AllocByID(nil, u.ID)
		if err != nil {
			return nil, err
		}
		if existing == nil || existing.DeploymentID == "" || existing.DeploymentStatus.IsHealthy() || existing.DeploymentStatus.IsUnhealthy() {
			continue
		}
		key := [2]string{existing.Namespace, existing.JobID}
		if seen[key] {
			continue
		}
		seen[key] = true
		d, err := st.DeploymentByID(nil, existing.DeploymentID)
		if err != nil {
			return nil, err
		}
		job, err := st.JobByID(nil, existing.Namespace, existing.JobID)
		if err != nil {
			return nil, err
		}
		if d.Active() && job != nil && !job.Stopped() {
			evals = append(evals, newJobEval(job, structs.EvalTriggerDeploymentWatcher, now))
		}
	}
	return evals, nil
}

// now is the deployment watcher's time.
func (s *Server) now() time.Time {
	if s.config.clock != nil {
		return s.config.clock()
	}
	return time.Now()
}
