package server

import (
	"errors"
	"net/rpc"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// reportHealthy reports the allocations running and healthy.
func reportHealthy(t *testing.T, c *rpc.Client, node *structs.Node, allocs []*structs.Allocation) {
	t.Helper()
	yes := true
	var updates []*structs.Allocation
	for _, a := range allocs {
		updates = append(updates, &structs.Allocation{ID: a.ID, NodeID: node.ID, JobID: a.JobID, Namespace: a.Namespace,
			ClientStatus:     structs.AllocClientStatusRunning,
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &yes, Timestamp: time.Now()}})
	}
	if err := c.Call(structs.RPCNodeUpdateAlloc, &structs.AllocUpdateRequest{NodeID: node.ID, SecretID: node.SecretID, Alloc: updates}, &structs.GenericResponse{}); err != nil {
		t.Fatalf("Node.UpdateAlloc: %v", err)
	}
}

func latestDeployment(t *testing.T, s *Server, jobID string) *structs.Deployment {
	t.Helper()
	d, err := s.State().LatestDeploymentByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDeploymentEndpoints runs a canary deployment through the
// endpoints on one real server with ACLs: the first version's
// deployment succeeds once healthy (marking it stable), an update places
// a canary, promotion is refused to a read token and while the canary
// is not healthy, then promotes and completes; pause, resume and fail
// check their input.
func TestDeploymentEndpoints(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 0)
	registerNode(t, c, node)
	job := gpuJob("web", structs.JobTypeService, 2, 0)
	job.TaskGroups[0].Tasks[0].Resources.Devices = nil
	job.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: 1, Canary: 1, HealthCheck: structs.UpdateHealthCheckTaskStates,
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
	if !storedJob(t, s, "web").Stable {
		t.Error("version 0 not stable after its deployment succeeded")
	}

	changed := job.Copy()
	changed.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": "2"}
	reg.Job = changed
	call(t, s, structs.RPCJobRegister, reg, &resp)
	waitEvalComplete(t, s, resp.EvalID)
	d := latestDeployment(t, s, "web")
	if d.JobVersion != 1 || !d.RequiresPromotion() {
		t.Fatalf("deployment %+v, want version 1 needing promotion", d)
	}
	if got, want := liveVersions(t, s), []uint64{0, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("live versions %v, want %v", got, want)
	}

	reader := clientToken(t, s, mgmt, "reader", `namespace "default" { policy = "read" }`)
	list := &structs.DeploymentListRequest{}
	list.AuthToken = reader.SecretID
	var lr structs.DeploymentListResponse
	call(t, s, structs.RPCDeploymentList, list, &lr)
	if len(lr.Deployments) != 2 || lr.Deployments[0].ID != d.ID {
		t.Errorf("list with a read token: %d deployments, want 2, newest first", len(lr.Deployments))
	}
	other := clientToken(t, s, mgmt, "other", `namespace "team" { policy = "write" }`)
	get := &structs.DeploymentSpecificRequest{DeploymentID: d.ID}
	get.AuthToken = other.SecretID
	if err := s.RPC(structs.RPCDeploymentGet, get, &structs.SingleDeploymentResponse{}); !isDenied(err) {
		t.Errorf("get with another namespace's token: %v, want permission denied", err)
	}
	get.AuthToken, get.DeploymentID = reader.SecretID, d.ID[:8]
	var one structs.SingleDeploymentResponse
	call(t, s, structs.RPCDeploymentGet, get, &one)
	if one.Deployment == nil || one.Deployment.ID != d.ID {
		t.Errorf("get by prefix: %+v", one.Deployment)
	}
	get.DeploymentID = "ffffffff-nope"
	if err := s.RPC(structs.RPCDeploymentGet, get, &structs.SingleDeploymentResponse{}); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("get unknown: %v, want not found", err)
	}

	promote := &structs.DeploymentPromoteRequest{DeploymentID: d.ID, All: true}
	promote.AuthToken = reader.SecretID
	if err := s.RPC(structs.RPCDeploymentPromote, promote, &structs.DeploymentUpdateResponse{}); !isDenied(err) {
		t.Errorf("promote with a read token: %v, want permission denied", err)
	}
	promote.AuthToken = mgmt
	if err := s.RPC(structs.RPCDeploymentPromote, promote, &structs.DeploymentUpdateResponse{}); !errors.Is(err, structs.ErrInvalid) ||
		err.Error() != `Task group "train" has 0/1 healthy allocations` {
		t.Errorf("promote before the canary is healthy: %v, want Nomad's refusal", err)
	}
	pause := &structs.DeploymentPauseRequest{DeploymentID: d.ID, Pause: true}
	pause.AuthToken = mgmt
	call(t, s, structs.RPCDeploymentPause, pause, &structs.DeploymentUpdateResponse{})
	if got := latestDeployment(t, s, "web").Status; got != structs.DeploymentStatusPaused {
		t.Errorf("after pause: %s", got)
	}
	pause.Pause = false
	var pr structs.DeploymentUpdateResponse
	call(t, s, structs.RPCDeploymentPause, pause, &pr)
	if got := latestDeployment(t, s, "web").Status; got != structs.DeploymentStatusRunning || pr.EvalID == "" {
		t.Errorf("after resume: %s, eval %q; want running with an eval", got, pr.EvalID)
	}

	reportHealthy(t, c, node, liveAllocs(t, s, "web"))
	var pro structs.DeploymentUpdateResponse
	call(t, s, structs.RPCDeploymentPromote, promote, &pro)
	if pro.EvalID == "" {
		t.Error("promote made no evaluation")
	}
	for _, want := range [][]uint64{{1, 1}} {
		waitFor(t, 20*time.Second, func() (bool, string) {
			reportHealthy(t, c, node, liveAllocs(t, s, "web"))
			got := liveVersions(t, s)
			return slices.Equal(got, want), "live versions not all 1"
		})
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		reportHealthy(t, c, node, liveAllocs(t, s, "web"))
		return latestDeployment(t, s, "web").Status == structs.DeploymentStatusSuccessful, "deployment not successful"
	})
	fail := &structs.DeploymentFailRequest{DeploymentID: d.ID}
	fail.AuthToken = mgmt
	if err := s.RPC(structs.RPCDeploymentFail, fail, &structs.DeploymentUpdateResponse{}); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("fail a successful deployment: %v, want invalid", err)
	}
}
