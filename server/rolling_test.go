package server

import (
	"fmt"
	"net/rpc"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestServer_RollingUpdate runs a rolling update end to end on one real
// Raft server: a changed task replaces one allocation (max_parallel = 1),
// and each replacement that its client reports running brings a
// rolling-update evaluation that replaces the next.
func TestServer_RollingUpdate(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 0)
	registerNode(t, c, node)
	job := gpuJob("web", structs.JobTypeService, 3, 0)
	job.TaskGroups[0].Tasks[0].Resources.Devices = nil
	resp := registerJob(t, s, job)
	waitEvalComplete(t, s, resp.EvalID)
	reportRunning(t, c, node, liveAllocs(t, s, "web"))

	changed := job.Copy()
	changed.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": "2"}
	resp = registerJob(t, s, changed)
	waitEvalComplete(t, s, resp.EvalID)
	if got, want := liveVersions(t, s), []uint64{0, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("after the update: live versions %v, want %v", got, want)
	}

	for _, want := range [][]uint64{{0, 1, 1}, {1, 1, 1}} {
		reportRunning(t, c, node, liveAllocs(t, s, "web"))
		waitFor(t, 10*time.Second, func() (bool, string) {
			got := liveVersions(t, s)
			return slices.Equal(got, want), fmt.Sprintf("live versions %v, want %v", got, want)
		})
	}
	evals, err := s.State().EvalsByJob(nil, structs.DefaultNamespace, "web")
	if err != nil {
		t.Fatal(err)
	}
	rolling := 0
	for _, e := range evals {
		if e.TriggeredBy == structs.EvalTriggerRollingUpdate {
			rolling++
		}
	}
	if rolling != 2 {
		t.Errorf("rolling-update evals: got %d, want 2 (one per batch after the first)", rolling)
	}
}

// waitEvalComplete waits until the evaluation is complete.
func waitEvalComplete(t *testing.T, s *Server, id string) {
	t.Helper()
	waitFor(t, 10*time.Second, func() (bool, string) {
		e := evalByID(t, s, id)
		return e != nil && e.Status == structs.EvalStatusComplete, fmt.Sprintf("eval %s not complete: %+v", id, e)
	})
}

// reportRunning reports allocs running over RPC, as their client would.
func reportRunning(t *testing.T, c *rpc.Client, node *structs.Node, allocs []*structs.Allocation) {
	t.Helper()
	var updates []*structs.Allocation
	for _, a := range allocs {
		if a.ClientStatus != structs.AllocClientStatusRunning {
			updates = append(updates, &structs.Allocation{ID: a.ID, NodeID: node.ID, JobID: a.JobID, Namespace: a.Namespace,
				ClientStatus: structs.AllocClientStatusRunning})
		}
	}
	if len(updates) == 0 {
		return
	}
	if err := c.Call(structs.RPCNodeUpdateAlloc, &structs.AllocUpdateRequest{NodeID: node.ID, SecretID: node.SecretID, Alloc: updates}, &structs.GenericResponse{}); err != nil {
		t.Fatalf("Node.UpdateAlloc: %v", err)
	}
}

// liveVersions returns the sorted job versions of web's live
// allocations.
func liveVersions(t *testing.T, s *Server) []uint64 {
	t.Helper()
	var out []uint64
	for _, a := range liveAllocs(t, s, "web") {
		out = append(out, a.Job.Version)
	}
	slices.Sort(out)
	return out
}

// TestServer_PlanCountsUpdates: a dry run of a job change reports its
// in-place and destructive updates and canaries per group.
func TestServer_PlanCountsUpdates(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	registerNode(t, dialRPC(t, s.RPCAddr()), gpuNode("n1", 0))
	job := gpuJob("web", structs.JobTypeService, 3, 0)
	job.TaskGroups[0].Tasks[0].Resources.Devices = nil
	waitEvalComplete(t, s, registerJob(t, s, job).EvalID)

	scaled := job.Copy()
	scaled.TaskGroups[0].Count = 4
	changed := job.Copy()
	changed.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": "2"}
	canary := changed.Copy()
	canary.TaskGroups[0].Update = structs.DefaultUpdateStrategy()
	canary.TaskGroups[0].Update.Canary = 1
	tests := []struct {
		name string
		job  *structs.Job
		want structs.DesiredUpdates
	}{
		{name: "count", job: scaled, want: structs.DesiredUpdates{Place: 1, InPlaceUpdate: 3}},
		{name: "env, max_parallel 1", job: changed, want: structs.DesiredUpdates{DestructiveUpdate: 1}},
		{name: "env, one canary", job: canary, want: structs.DesiredUpdates{Canary: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp structs.JobPlanResponse
			if err := s.RPC(structs.RPCJobPlan, &structs.JobPlanRequest{Job: tt.job}, &resp); err != nil {
				t.Fatalf("Job.Plan: %v", err)
			}
			got := resp.Annotations.DesiredTGUpdates["train"]
			if got == nil || *got != tt.want {
				t.Errorf("updates: got %+v, want %+v", got, tt.want)
			}
		})
	}
}
