package server

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestServer_PlanGangNetwork: through the real server, a dry run of a
// gang kept within one rack says which level did not fit, and a gang
// that fits lands in one rack.
func TestServer_PlanGangNetwork(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	// 7 GPUs in each rack.
	for _, n := range []struct {
		name, rack string
		gpus       int
	}{{"a1", "r1", 4}, {"a2", "r1", 3}, {"b1", "r2", 4}, {"b2", "r2", 3}} {
		node := gpuNode(n.name, n.gpus)
		node.Attributes[structs.TopologyAttrPrefix+structs.TopologyRack] = n.rack
		registerNode(t, c, node)
	}
	gang := func(id string, count int) *structs.Job {
		job := gpuJob(id, structs.JobTypeBatch, count, 1)
		job.TaskGroups[0].Gang = &structs.Gang{Min: count, Network: &structs.GangNetwork{Level: structs.TopologyRack}}
		job.Canonicalize()
		return job
	}

	var resp structs.JobPlanResponse
	if err := s.RPC(structs.RPCJobPlan, &structs.JobPlanRequest{Job: gang("big", 8)}, &resp); err != nil {
		t.Fatalf("Job.Plan: %v", err)
	}
	want := "gang network: no rack fits 8 GPUs (best r1: 7 free)"
	if m := resp.FailedTGAllocs["train"]; m == nil || !strings.Contains(m.Gang, want) {
		t.Fatalf("plan failure: got %+v, want a gang reason containing %q", m, want)
	}

	resp = structs.JobPlanResponse{}
	if err := s.RPC(structs.RPCJobPlan, &structs.JobPlanRequest{Job: gang("small", 6)}, &resp); err != nil {
		t.Fatalf("Job.Plan: %v", err)
	}
	racks := map[string]int{}
	for _, p := range resp.Placements {
		racks[map[string]string{"a1": "r1", "a2": "r1", "b1": "r2", "b2": "r2"}[p.NodeName]]++
	}
	if len(resp.FailedTGAllocs) != 0 || len(racks) != 1 || racks["r1"]+racks["r2"] != 6 {
		t.Errorf("plan of a gang of 6: got racks %v, failures %v; want all 6 in one rack", racks, resp.FailedTGAllocs)
	}

	// A bad level is refused at registration, naming it.
	bad := gang("bad", 2)
	bad.TaskGroups[0].Gang.Network.Level = "row"
	var reg structs.JobRegisterResponse
	err := s.RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: bad}, &reg)
	if err == nil || !strings.Contains(err.Error(), `gang network level "row"`) {
		t.Errorf("register with level row: got %v, want a refusal naming it", err)
	}
}
