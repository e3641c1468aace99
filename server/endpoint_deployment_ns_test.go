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

// TestDeploymentFailRevertNeedsTheQueue: failing a deployment by hand
// auto-reverts to the stable version; when that version runs in a queue
// the token may not submit into, the fail is refused as Job.Revert to it
// would be.
func TestDeploymentFailRevertNeedsTheQueue(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 0)
	registerNode(t, c, node)
	q := &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "prod", Weight: 10}}
	q.AuthToken = mgmt
	call(t, s, structs.RPCQueueUpsert, q, &structs.GenericResponse{})
	job := gpuJob("web", structs.JobTypeService, 1, 0)
	job.Queue = "prod"
	job.TaskGroups[0].Tasks[0].Resources.Devices = nil
	job.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: 1, AutoRevert: true, HealthCheck: structs.UpdateHealthCheckTaskStates,
		Stagger: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 5 * time.Minute}
	reg := &structs.JobRegisterRequest{Job: job}
	reg.AuthToken = mgmt
	var resp structs.JobRegisterResponse
	call(t, s, structs.RPCJobRegister, reg, &resp)
	waitEvalComplete(t, s, resp.EvalID)
	reportHealthy(t, c, node, liveAllocs(t, s, "web"))
	waitFor(t, 10*time.Second, func() (bool, string) {
		d := latestDeployment(t, s, "web")
		return d != nil && d.Status == structs.DeploymentStatusSuccessful, "first deployment not successful"
	})
	changed := job.Copy()
	changed.Queue = ""
	changed.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": "2"}
	reg.Job = changed
	call(t, s, structs.RPCJobRegister, reg, &resp)
	waitEvalComplete(t, s, resp.EvalID)
	d := latestDeployment(t, s, "web")
	if d.JobVersion != 1 || d.Status != structs.DeploymentStatusRunning {
		t.Fatalf("deployment %+v, want version 1 running", d)
	}
	writer := clientToken(t, s, mgmt, "writer", `namespace "default" { policy = "write" }`)
	fail := &structs.DeploymentFailRequest{DeploymentID: d.ID}
	fail.AuthToken = writer.SecretID
	if err := s.RPC(structs.RPCDeploymentFail, fail, &structs.DeploymentUpdateResponse{}); !isDenied(err) {
		t.Errorf("fail reverting into queue prod without its write: %v, want permission denied", err)
	}
	if got := latestDeployment(t, s, "web"); got.Status != structs.DeploymentStatusRunning || storedJob(t, s, "web").Queue == "prod" {
		t.Fatalf("after a refused fail: deployment %s, queue %q; want running, default", got.Status, storedJob(t, s, "web").Queue)
	}
	prod := clientToken(t, s, mgmt, "prod-writer", `namespace "default" { policy = "write" }
queue "prod" { policy = "write" }`)
	fail.AuthToken = prod.SecretID
	var fr structs.DeploymentUpdateResponse
	call(t, s, structs.RPCDeploymentFail, fail, &fr)
	if fr.RevertedJobVersion == nil || *fr.RevertedJobVersion != 0 || storedJob(t, s, "web").Queue != "prod" {
		t.Errorf("fail with the queue: reverted to %v, queue %q; want version 0 in prod", fr.RevertedJobVersion, storedJob(t, s, "web").Queue)
	}
}
