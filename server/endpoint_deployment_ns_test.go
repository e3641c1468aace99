package server

import (
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestDeploymentNamespaceWildcardDoesNotCross: a token of another
// namespace, asking with namespace "*", can neither read nor change a
// deployment of the default namespace (by ID or prefix): "*" is not a
// way past the namespace's capabilities.
func TestDeploymentNamespaceWildcardDoesNotCross(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 0))
	ns := &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team"}}}
	ns.AuthToken = mgmt
	call(t, s, structs.RPCNamespaceUpsert, ns, &structs.GenericResponse{})
	job := gpuJob("web", structs.JobTypeService, 1, 0)
	job.TaskGroups[0].Tasks[0].Resources.Devices = nil
	reg := &structs.JobRegisterRequest{Job: job}
	reg.AuthToken = mgmt
	var resp structs.JobRegisterResponse
	call(t, s, structs.RPCJobRegister, reg, &resp)
	waitEvalComplete(t, s, resp.EvalID)
	var d *structs.Deployment
	waitFor(t, 10*time.Second, func() (bool, string) {
		d = latestDeployment(t, s, "web")
		return d != nil, "no deployment"
	})
	other := clientToken(t, s, mgmt, "team-writer", `namespace "team" { policy = "write" }`)

	for _, id := range []string{d.ID, d.ID[:8]} {
		get := &structs.DeploymentSpecificRequest{DeploymentID: id}
		get.AuthToken, get.Namespace = other.SecretID, "*"
		var one structs.SingleDeploymentResponse
		if err := s.RPC(structs.RPCDeploymentGet, get, &one); err == nil || one.Deployment != nil {
			t.Errorf("get %s with namespace * and another namespace's token: %v, %+v; want an error", id, err, one.Deployment)
		}
		var allocs structs.DeploymentAllocationsResponse
		if err := s.RPC(structs.RPCDeploymentAllocations, get, &allocs); err == nil || len(allocs.Allocations) > 0 {
			t.Errorf("allocations of %s with namespace *: %v, %d allocs; want an error", id, err, len(allocs.Allocations))
		}
		pause := &structs.DeploymentPauseRequest{DeploymentID: id, Pause: true}
		pause.AuthToken, pause.Namespace = other.SecretID, "*"
		_ = s.RPC(structs.RPCDeploymentPause, pause, &structs.DeploymentUpdateResponse{})
		fail := &structs.DeploymentFailRequest{DeploymentID: id}
		fail.AuthToken, fail.Namespace = other.SecretID, "*"
		_ = s.RPC(structs.RPCDeploymentFail, fail, &structs.DeploymentUpdateResponse{})
		if got := latestDeployment(t, s, "web").Status; got != d.Status && got != structs.DeploymentStatusSuccessful {
			t.Fatalf("deployment is %s after another namespace's pause/fail, want it untouched", got)
		}
	}
	// The owner's namespace still reads it with "*".
	get := &structs.DeploymentSpecificRequest{DeploymentID: d.ID}
	get.AuthToken, get.Namespace = mgmt, "*"
	var one structs.SingleDeploymentResponse
	call(t, s, structs.RPCDeploymentGet, get, &one)
	if one.Deployment == nil || one.Deployment.ID != d.ID {
		t.Errorf("management get with namespace *: %+v", one.Deployment)
	}
}
