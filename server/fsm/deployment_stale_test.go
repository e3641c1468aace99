package fsm

import (
	"testing"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// TestDeploymentStaleDecisions: a status update decided on a deployment
// applies its auto-revert only while the job is still at the
// deployment's version (a registration made since is not overwritten),
// and one decided on a deployment that has ended since changes nothing
// (no stability, no job, no evaluation).
func TestDeploymentStaleDecisions(t *testing.T) {
	f, rec := newTestFSM(t)
	v0 := testJob("j")
	apply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: v0})
	v1 := v0.Copy()
	v1.TaskGroups[0].Count = 2
	apply(t, f, 3, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: v1})
	cur, _ := f.State().JobByID(nil, "", "j")
	d := testDeployment("d1", cur)
	if err := f.State().Write(4, func(tx *state.Txn) error { return tx.UpsertDeployment(d) }); err != nil {
		t.Fatal(err)
	}
	v2 := v0.Copy()
	v2.TaskGroups[0].Count = 3
	apply(t, f, 5, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: v2}) // the user's, after the decision
	rec.take()

	revert := v0.Copy()
	apply(t, f, 6, structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "d1", Status: structs.DeploymentStatusFailed},
		Job:              revert, Eval: testEval("e-revert", "j", structs.EvalStatusPending)})
	if got, _ := f.State().JobByID(nil, "", "j"); got.Version != 2 || got.TaskGroups[0].Count != 3 {
		t.Errorf("job after a stale auto-revert: version %d count %d, want the user's version 2 (count 3)", got.Version, got.TaskGroups[0].Count)
	}
	if e, _ := f.State().EvalByID(nil, "e-revert"); e != nil {
		t.Error("the stale auto-revert's evaluation was stored")
	}
	if evals, _ := rec.take(); len(evals) != 0 {
		t.Errorf("evaluations notified %v, want none", evals)
	}

	// d1 is failed now: a success decided before that marks nothing stable.
	apply(t, f, 7, structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{MarkStable: true,
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "d1", Status: structs.DeploymentStatusSuccessful}})
	if v, _ := f.State().JobByIDAndVersion(nil, "", "j", 1); v == nil || v.Stable {
		t.Errorf("version 1 after a stale success: %+v, want it not stable", v)
	}
	if got, _ := f.State().DeploymentByID(nil, "d1"); got.Status != structs.DeploymentStatusFailed {
		t.Errorf("deployment %s, want failed kept", got.Status)
	}
}
