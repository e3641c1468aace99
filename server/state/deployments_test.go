package state

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestDeploymentsPrunedAndCounted: a plan's placements and the client's
// health count in the deployment; a job keeps its newest deployments
// (active ones always) and a purge drops them.
func TestDeploymentsPrunedAndCounted(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	must(t, s.UpsertJob(1, job))
	job, _ = s.JobByID(nil, "", "j")
	d := structs.NewDeployment(job, 1)
	d.TaskGroups[job.TaskGroups[0].Name] = &structs.DeploymentState{DesiredTotal: 1, DesiredCanaries: 1}
	a := testAlloc("a1", job, "n1", "e1")
	a.DeploymentID = d.ID
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	must(t, s.Write(2, func(tx *Txn) error {
		req := &structs.ApplyPlanResultsRequest{Deployment: d, AllocsPlaced: []*structs.Allocation{a}}
		if err := tx.ApplyPlanDeployments(req); err != nil {
			return err
		}
		return tx.UpsertPlanAllocs(req)
	}))
	yes := true
	must(t, s.UpdateAllocsFromClient(3, []*structs.Allocation{{ID: "a1", ModifyTime: 5,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &yes}}}))
	got, _ := s.DeploymentByID(nil, d.ID)
	st := got.TaskGroups[job.TaskGroups[0].Name]
	if st.PlacedAllocs != 1 || len(st.PlacedCanaries) != 1 || st.HealthyAllocs != 1 {
		t.Errorf("counts %+v, want 1 placed canary, healthy", st)
	}
	if stored, _ := s.AllocByID(nil, "a1"); !stored.DeploymentStatus.IsHealthy() || !stored.DeploymentStatus.IsCanary() {
		t.Errorf("alloc deployment status %+v, want a healthy canary", stored.DeploymentStatus)
	}

	for i := range structs.JobTrackedVersions + 2 {
		old := structs.NewDeployment(job, 1)
		old.Status = structs.DeploymentStatusSuccessful
		must(t, s.Write(uint64(10+i), func(tx *Txn) error { return tx.UpsertDeployment(old) }))
	}
	all, _ := s.DeploymentsByJob(nil, "", "j")
	if len(all) != structs.JobTrackedVersions+1 {
		t.Errorf("%d deployments kept, want %d (the newest and the active one)", len(all), structs.JobTrackedVersions+1)
	}
	if kept, _ := s.DeploymentByID(nil, d.ID); kept == nil {
		t.Error("the active deployment was pruned")
	}
	must(t, s.DeleteJob(30, "", "j"))
	if all, _ = s.DeploymentsByJob(nil, "", "j"); len(all) != 0 {
		t.Errorf("%d deployments after purge, want 0", len(all))
	}
}
