package schedtest

import (
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestNodeFixture(t *testing.T) {
	n := Node("gpu-1", 4, "", 80)
	if !n.Ready() || n.ID != NodeID("gpu-1") || n.ID == NodeID("gpu-2") {
		t.Fatalf("node: got ready %v ID %s, want a ready node with a stable ID per name", n.Ready(), n.ID)
	}
	g := n.NodeResources.Devices[0]
	if g.ID() != "nvidia/gpu/"+H100 || g.Attributes["memory"] != "80 GiB" {
		t.Errorf("group: got %s with memory %q", g.ID(), g.Attributes["memory"])
	}
	ids := g.SortedDeviceIDs()
	for i, id := range ids {
		if id != GPUID("gpu-1", H100, i) {
			t.Errorf("sorted ID %d: got %s, want GPU %d", i, id, i)
		}
	}
	wantLinks := map[[2]int]string{
		{0, 1}: structs.LinkNVLink, {2, 3}: structs.LinkNVLink,
		{0, 2}: structs.LinkSystem, {1, 3}: structs.LinkSystem,
	}
	for pair, want := range wantLinks {
		if got := g.Instances[pair[0]].Links[ids[pair[1]]]; got != want {
			t.Errorf("link %v: got %q, want %q", pair, got, want)
		}
	}
	if got := Node("gpu-1", 8, "", 80).NodeResources.Devices[0].Instances[0].Links[GPUID("gpu-1", H100, 2)]; got != structs.LinkPCIeSwitch {
		t.Errorf("8-GPU link 0-2: got %q, want %q", got, structs.LinkPCIeSwitch)
	}
	if len(Node("cpu-1", 0, "", 0).NodeResources.Devices) != 0 {
		t.Errorf("cpu node: got devices, want none")
	}
}

// planHolding returns a plan placing an allocation of job on node that
// holds the GPUs given.
func planHolding(job *structs.Job, node *structs.Node, gpus ...string) *structs.Plan {
	a := &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, Name: structs.AllocName(job.ID, GPUGroup, 0),
		NodeID: node.ID, JobID: job.ID, Job: job, TaskGroup: GPUGroup,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			GPUGroup: {Devices: []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: H100, DeviceIDs: gpus}}},
		}},
	}
	p := &structs.Plan{Job: job}
	p.AppendAlloc(a)
	return p
}

func TestSubmitPlanRechecksLikeTheApplier(t *testing.T) {
	node := Node("gpu-1", 4, "", 80)
	node.NodeResources.Devices[0].Instances[3].Healthy = false
	gpu := func(i int) string { return GPUID("gpu-1", H100, i) }
	tests := []struct {
		name     string
		first    []string
		second   []string
		rejected bool
	}{
		{name: "disjoint GPUs", first: []string{gpu(0)}, second: []string{gpu(1)}, rejected: false},
		{name: "GPU held twice", first: []string{gpu(0)}, second: []string{gpu(0), gpu(1)}, rejected: true},
		{name: "unhealthy GPU", first: []string{gpu(0)}, second: []string{gpu(3)}, rejected: true},
		{name: "unknown GPU", first: []string{gpu(0)}, second: []string{"GPU-nope"}, rejected: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHarness(t)
			h.UpsertNode(node)
			job := h.UpsertJob(GPUJob("j", 1, 1))
			if res, _, err := h.SubmitPlan(planHolding(job, node, tt.first...)); err != nil || res.RefreshIndex != 0 {
				t.Fatalf("first plan: got %+v %v, want committed", res, err)
			}

			res, fresh, err := h.SubmitPlan(planHolding(job, node, tt.second...))
			if err != nil {
				t.Fatalf("second plan: %v", err)
			}
			if got := res.RefreshIndex != 0; got != tt.rejected {
				t.Errorf("rejected: got %v (%v), want %v", got, h.Rejections(), tt.rejected)
			}
			if got := slices.Equal(res.RejectedNodes, []string{node.ID}); got != tt.rejected {
				t.Errorf("rejected nodes: got %v", res.RejectedNodes)
			}
			allocs, err := fresh.AllocsByNode(nil, node.ID)
			if err != nil {
				t.Fatalf("read allocs: %v", err)
			}
			want := 2
			if tt.rejected {
				want = 1
			}
			if len(allocs) != want {
				t.Errorf("allocs in fresh state: got %d, want %d", len(allocs), want)
			}
		})
	}
}

func TestHarnessRecordsEvals(t *testing.T) {
	h := NewHarness(t)
	job := h.UpsertJob(GPUJob("j", 1, 1))
	eval := h.NewEval(job, structs.EvalTriggerJobRegister)
	if eval.Status != structs.EvalStatusPending || eval.JobModifyIndex != job.JobModifyIndex || eval.CreateTime != Epoch.UnixNano() {
		t.Fatalf("eval: got %+v", eval)
	}
	done := eval.Copy()
	done.Status = structs.EvalStatusComplete
	if err := h.UpdateEval(done); err != nil {
		t.Fatalf("update eval: %v", err)
	}
	if got := h.Eval(eval.ID).Status; got != structs.EvalStatusComplete {
		t.Errorf("eval in state: got %s, want complete", got)
	}
	if n := len(h.UpdatedEvals()); n != 1 {
		t.Errorf("updated evals: got %d, want 1", n)
	}
	h.Advance(5)
	if got := h.Now().Sub(Epoch); got != 5 {
		t.Errorf("clock: got +%v, want +5ns", got)
	}
}
