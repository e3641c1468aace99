package schedtest

import (
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// SetHealth records the client's decision on an allocation's health in
// its deployment, as a client update does.
func (h *Harness) SetHealth(allocID string, healthy bool) {
	h.t.Helper()
	update := &structs.Allocation{ID: allocID, ModifyTime: h.Now().UnixNano(),
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: h.Now()}}
	if err := h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{update}); err != nil {
		h.t.Fatalf("health of alloc %s: %v", allocID, err)
	}
}

// LatestDeployment returns the job's newest deployment, or nil.
func (h *Harness) LatestDeployment(namespace, jobID string) *structs.Deployment {
	h.t.Helper()
	d, err := h.State.LatestDeploymentByJob(nil, namespace, jobID)
	if err != nil {
		h.t.Fatalf("read deployment of %s: %v", jobID, err)
	}
	return d
}

// PromoteDeployment promotes all of a deployment's canaries, as the
// Deployment.Promote entry does.
func (h *Harness) PromoteDeployment(id string) {
	h.t.Helper()
	if err := h.State.Write(h.NextIndex(), func(tx *state.Txn) error { return tx.PromoteDeployment(id, true, nil, h.Now().UnixNano()) }); err != nil {
		h.t.Fatalf("promote %s: %v", id, err)
	}
}

// SetDeploymentStatus changes a deployment's status.
func (h *Harness) SetDeploymentStatus(id, status string) {
	h.t.Helper()
	u := &structs.DeploymentStatusUpdate{DeploymentID: id, Status: status}
	if err := h.State.Write(h.NextIndex(), func(tx *state.Txn) error { return tx.UpdateDeploymentStatus(u, 0) }); err != nil {
		h.t.Fatalf("status of %s: %v", id, err)
	}
}
