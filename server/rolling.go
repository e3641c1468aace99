package server

import (
	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/structs"
)

// rollingUpdateEvals returns one rolling-update evaluation per job whose
// allocation the updates newly mark running while a rolling update of
// the job still has allocations to replace (scheduler.RollingUpdateWaiting):
// a replacement that runs frees a slot of max_parallel. Jobs that already
// get one of the evals in have are skipped.
func (s *Server) rollingUpdateEvals(updates []*structs.Allocation, have []*structs.Evaluation, now int64) ([]*structs.Evaluation, error) {
	st := s.State()
	seen := map[[2]string]bool{}
	for _, e := range have {
		seen[[2]string{e.Namespace, e.JobID}] = true
	}
	var evals []*structs.Evaluation
	for _, u := range updates {
		if u.ClientStatus != structs.AllocClientStatusRunning {
			continue
		}
		existing, err := st.AllocByID(nil, u.ID)
		if err != nil {
			return nil, err
		}
		if existing == nil || existing.ClientStatus == structs.AllocClientStatusRunning ||
			existing.DesiredStatus != structs.AllocDesiredStatusRun {
			continue
		}
		key := [2]string{existing.Namespace, existing.JobID}
		if seen[key] {
			continue
		}
		seen[key] = true
		job, err := st.JobByID(nil, existing.Namespace, existing.JobID)
		if err != nil {
			return nil, err
		}
		if job == nil {
			continue
		}
		allocs, err := st.AllocsByJob(nil, job.Namespace, job.ID)
		if err != nil {
			return nil, err
		}
		if scheduler.RollingUpdateWaiting(job, allocs) {
			evals = append(evals, newJobEval(job, structs.EvalTriggerRollingUpdate, now))
		}
	}
	return evals, nil
}
