package scheduler_test

import (
	"slices"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

const ns = structs.DefaultNamespace

// process runs eval through the scheduler and fails the test on an error
// or on any node part the harness's plan applier had to refuse.
func process(t *testing.T, h *schedtest.Harness, eval *structs.Evaluation) {
	t.Helper()
	if err := h.Process(eval); err != nil {
		t.Fatalf("process: %v", err)
	}
	if r := h.Rejections(); len(r) > 0 {
		t.Fatalf("plan applier refused: %v", r)
	}
}

// lastUpdate returns the last evaluation the scheduler updated.
func lastUpdate(t *testing.T, h *schedtest.Harness) *structs.Evaluation {
	t.Helper()
	evals := h.UpdatedEvals()
	if len(evals) == 0 {
		t.Fatalf("no eval updated")
	}
	return evals[len(evals)-1]
}

// onlyAlloc returns the job's single live allocation.
func onlyAlloc(t *testing.T, h *schedtest.Harness, jobID string) *structs.Allocation {
	t.Helper()
	live := h.LiveAllocs(ns, jobID)
	if len(live) != 1 {
		t.Fatalf("live allocs of %s: got %d, want 1", jobID, len(live))
	}
	return live[0]
}

func TestGPUJobGetsDistinctGPUs(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := schedtest.Node("gpu-1", 4, "", 80)
	h.UpsertNode(node)

	process(t, h, h.RegisterJob(schedtest.GPUJob("train-a", 1, 2)))

	a := onlyAlloc(t, h, "train-a")
	ids := a.DeviceIDs()
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("device IDs: got %v, want 2 distinct", ids)
	}
	if p := node.DeviceProblem(a); p != "" {
		t.Fatalf("devices: got problem %q, want healthy instances of the node", p)
	}
	devs := a.AllocatedResources.Tasks[schedtest.GPUGroup].Devices
	if len(devs) != 1 || devs[0].ID() != "nvidia/gpu/"+schedtest.H100 {
		t.Fatalf("allocated devices: got %+v, want one nvidia/gpu/%s group", devs, schedtest.H100)
	}
	if a.Name != "train-a.train[0]" || a.NodeID != node.ID || a.NodeName != "gpu-1" {
		t.Errorf("alloc: got name %q node %q (%s)", a.Name, a.NodeID, a.NodeName)
	}
	if a.ClientStatus != structs.AllocClientStatusPending || a.DesiredStatus != structs.AllocDesiredStatusRun {
		t.Errorf("alloc status: got %s/%s, want run/pending", a.DesiredStatus, a.ClientStatus)
	}
	if a.CreateTime != schedtest.Epoch.UnixNano() {
		t.Errorf("create time: got %d, want the harness clock %d", a.CreateTime, schedtest.Epoch.UnixNano())
	}
	if a.Metrics == nil || len(a.Metrics.ScoreMetaData) != 1 {
		t.Errorf("metrics: got %+v, want one node scored", a.Metrics)
	}
	e := lastUpdate(t, h)
	if e.Status != structs.EvalStatusComplete || e.BlockedEval != "" || len(e.FailedTGAllocs) != 0 {
		t.Errorf("eval: got status %s blocked %q failed %v, want complete and nothing blocked", e.Status, e.BlockedEval, e.FailedTGAllocs)
	}
	if e.QueuedAllocations[schedtest.GPUGroup] != 0 {
		t.Errorf("queued: got %v, want 0", e.QueuedAllocations)
	}
}

func TestGPUJobsShareNodeWithDisjointGPUsThenBlock(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))

	process(t, h, h.RegisterJob(schedtest.GPUJob("a", 1, 2)))
	process(t, h, h.RegisterJob(schedtest.GPUJob("b", 1, 2)))
	a, b := onlyAlloc(t, h, "a"), onlyAlloc(t, h, "b")
	all := append(a.DeviceIDs(), b.DeviceIDs()...)
	slices.Sort(all)
	if len(slices.Compact(all)) != 4 {
		t.Fatalf("GPUs of a %v and b %v: want 4 distinct", a.DeviceIDs(), b.DeviceIDs())
	}

	third := h.RegisterJob(schedtest.GPUJob("c", 1, 2))
	process(t, h, third)
	if live := h.LiveAllocs(ns, "c"); len(live) != 0 {
		t.Fatalf("job c: got %d allocs, want none", len(live))
	}
	e := lastUpdate(t, h)
	if e.ID != third.ID || e.Status != structs.EvalStatusComplete {
		t.Fatalf("eval: got %s status %s, want %s complete", e.ID, e.Status, third.ID)
	}
	if e.QueuedAllocations[schedtest.GPUGroup] != 1 {
		t.Errorf("queued: got %v, want 1", e.QueuedAllocations)
	}
	m := e.FailedTGAllocs[schedtest.GPUGroup]
	if m == nil {
		t.Fatalf("failed allocs: got %v, want the group", e.FailedTGAllocs)
	}
	want := "devices: nvidia/gpu: 0 of 4 free, need 2"
	if m.NodesExhausted != 1 || m.DimensionExhausted[want] != 1 {
		t.Errorf("metric: got exhausted %d %v, want 1 for %q", m.NodesExhausted, m.DimensionExhausted, want)
	}
	created := h.CreatedEvals()
	if len(created) != 1 {
		t.Fatalf("created evals: got %d, want 1 blocked", len(created))
	}
	blocked := created[0]
	if blocked.Status != structs.EvalStatusBlocked || blocked.ID != e.BlockedEval || blocked.PreviousEval != third.ID {
		t.Errorf("blocked eval: got status %s ID %s previous %s, want blocked, linked both ways", blocked.Status, blocked.ID, blocked.PreviousEval)
	}
	if blocked.FailedTGAllocs[schedtest.GPUGroup].DimensionExhausted[want] != 1 {
		t.Errorf("blocked eval metric: got %+v", blocked.FailedTGAllocs)
	}
}

func TestBlockedEvalReblocksThenPlacesWhenGPUsFree(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	process(t, h, h.RegisterJob(schedtest.GPUJob("a", 1, 2)))
	process(t, h, h.RegisterJob(schedtest.GPUJob("b", 1, 2)))
	process(t, h, h.RegisterJob(schedtest.GPUJob("c", 1, 2)))
	blocked := h.Eval(lastUpdate(t, h).BlockedEval)

	// Nothing freed yet: the blocked eval goes back, no new one appears.
	process(t, h, blocked)
	if n := len(h.ReblockedEvals()); n != 1 {
		t.Fatalf("reblocked: got %d, want 1", n)
	}
	if re := h.ReblockedEvals()[0]; re.ID != blocked.ID || re.Status != structs.EvalStatusBlocked || re.FailedTGAllocs[schedtest.GPUGroup] == nil {
		t.Errorf("reblocked eval: got %s status %s failed %v", re.ID, re.Status, re.FailedTGAllocs)
	}
	if n := len(h.CreatedEvals()); n != 1 {
		t.Errorf("created evals: got %d, want still 1", n)
	}

	a := onlyAlloc(t, h, "a")
	h.SetClientStatus(a.ID, structs.AllocClientStatusComplete)
	process(t, h, h.Eval(blocked.ID))

	c := onlyAlloc(t, h, "c")
	if !slices.Equal(c.DeviceIDs(), a.DeviceIDs()) {
		t.Errorf("c's GPUs: got %v, want the ones a released %v", c.DeviceIDs(), a.DeviceIDs())
	}
	e := lastUpdate(t, h)
	if e.ID != blocked.ID || e.Status != structs.EvalStatusComplete || len(e.FailedTGAllocs) != 0 {
		t.Errorf("blocked eval after placing: got %s status %s failed %v, want complete", e.ID, e.Status, e.FailedTGAllocs)
	}
	if got := h.Eval(blocked.ID).Status; got != structs.EvalStatusComplete {
		t.Errorf("blocked eval in state: got %s, want complete", got)
	}
}

func TestTooManyGPUsNeverPlaced(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 4, "", 80))

	process(t, h, h.RegisterJob(schedtest.GPUJob("big", 1, 5)))

	if n := len(h.Allocs(ns, "big")); n != 0 {
		t.Fatalf("allocs: got %d, want none", n)
	}
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]
	want := "devices: nvidia/gpu: node has 4 matching, need 5"
	if m == nil || m.DimensionExhausted[want] != 2 || m.NodesEvaluated != 2 {
		t.Fatalf("metric: got %+v, want both nodes exhausted with %q", m, want)
	}
}

func TestDeviceMemoryConstraintFiltersWithConstraintAsReason(t *testing.T) {
	tests := []struct {
		name     string
		value    string
		placed   bool
		filtered string
	}{
		{name: "too big", value: "100 GiB", placed: false, filtered: "${device.attr.memory} >= 100 GiB"},
		{name: "fits", value: "40 GiB", placed: true},
		{name: "exactly", value: "80 GiB", placed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
			h.UpsertNode(schedtest.Node("gpu-2", 4, "", 80))
			job := schedtest.GPUJob("mem", 1, 1)
			job.TaskGroups[0].Tasks[0].Resources.Devices[0].Constraints = []*structs.Constraint{
				{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: tt.value},
			}

			process(t, h, h.RegisterJob(job))

			if got := len(h.LiveAllocs(ns, "mem")) == 1; got != tt.placed {
				t.Fatalf("placed: got %v, want %v", got, tt.placed)
			}
			m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]
			if tt.filtered == "" {
				return
			}
			if m == nil || m.ConstraintFiltered[tt.filtered] != 2 || m.NodesFiltered != 2 || m.NodesExhausted != 0 {
				t.Errorf("metric: got %+v, want 2 nodes filtered by %q", m, tt.filtered)
			}
		})
	}
}

func TestNVLinkPairChosenAndSingleGPUsFillBrokenPairs(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := schedtest.Node("gpu-1", 4, "", 80)
	h.UpsertNode(node)
	gpu := func(i int) string { return schedtest.GPUID("gpu-1", schedtest.H100, i) }

	process(t, h, h.RegisterJob(schedtest.GPUJob("one", 1, 1)))
	if got := onlyAlloc(t, h, "one").DeviceIDs(); !slices.Equal(got, []string{gpu(0)}) {
		t.Fatalf("first single GPU: got %v, want GPU 0", got)
	}

	// GPU 1 is now the odd one out: lowest IDs would give {1, 2}, which
	// are not linked; the NVLink pair {2, 3} must win.
	process(t, h, h.RegisterJob(schedtest.GPUJob("pair", 1, 2)))
	got := onlyAlloc(t, h, "pair").DeviceIDs()
	if !slices.Equal(got, []string{gpu(2), gpu(3)}) {
		t.Fatalf("pair: got %v, want NVLink pair %v", got, []string{gpu(2), gpu(3)})
	}

	// A further single GPU takes GPU 1, the partner of the busy GPU 0.
	process(t, h, h.RegisterJob(schedtest.GPUJob("two", 1, 1)))
	if got := onlyAlloc(t, h, "two").DeviceIDs(); !slices.Equal(got, []string{gpu(1)}) {
		t.Fatalf("second single GPU: got %v, want GPU 1", got)
	}
}

func TestSingleGPULeavesNVLinkPairWhole(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	gpu := func(i int) string { return schedtest.GPUID("gpu-1", schedtest.H100, i) }

	process(t, h, h.RegisterJob(schedtest.GPUJob("pair", 1, 2)))
	process(t, h, h.RegisterJob(schedtest.GPUJob("one", 1, 1)))
	pair, one := onlyAlloc(t, h, "pair").DeviceIDs(), onlyAlloc(t, h, "one").DeviceIDs()
	if !slices.Equal(pair, []string{gpu(0), gpu(1)}) || !slices.Equal(one, []string{gpu(2)}) {
		t.Fatalf("got pair %v and one %v, want GPUs 0-1 and 2", pair, one)
	}
}

func TestUnhealthyGPUNeverChosen(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := schedtest.Node("gpu-1", 4, "", 80)
	node.NodeResources.Devices[0].Instances[0].Healthy = false
	node.NodeResources.Devices[0].Instances[2].Healthy = false
	h.UpsertNode(node)
	gpu := func(i int) string { return schedtest.GPUID("gpu-1", schedtest.H100, i) }

	process(t, h, h.RegisterJob(schedtest.GPUJob("pair", 1, 2)))
	if got := onlyAlloc(t, h, "pair").DeviceIDs(); !slices.Equal(got, []string{gpu(1), gpu(3)}) {
		t.Fatalf("pair: got %v, want the healthy GPUs 1 and 3", got)
	}
	process(t, h, h.RegisterJob(schedtest.GPUJob("more", 1, 1)))
	if n := len(h.LiveAllocs(ns, "more")); n != 0 {
		t.Fatalf("more: got %d allocs, want none (only unhealthy GPUs left)", n)
	}
	want := "devices: nvidia/gpu: 0 of 4 free, need 1"
	if m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]; m == nil || m.DimensionExhausted[want] != 1 {
		t.Errorf("metric: got %+v, want %q", m, want)
	}
}

func TestBinPackPrefersFullerGPUNode(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 8, "", 80))
	h.UpsertNode(schedtest.Node("gpu-3", 8, "", 80))

	process(t, h, h.RegisterJob(schedtest.GPUJob("first", 1, 2)))
	first := onlyAlloc(t, h, "first")
	for _, id := range []string{"second", "third", "fourth"} {
		process(t, h, h.RegisterJob(schedtest.GPUJob(id, 1, 2)))
		if got := onlyAlloc(t, h, id).NodeID; got != first.NodeID {
			t.Fatalf("%s: got node %s, want the fuller node %s", id, got, first.NodeID)
		}
	}
	// That node is full now; the next goes elsewhere.
	process(t, h, h.RegisterJob(schedtest.GPUJob("fifth", 1, 2)))
	fifth := onlyAlloc(t, h, "fifth")
	if fifth.NodeID == first.NodeID {
		t.Fatalf("fifth: got the full node %s", fifth.NodeID)
	}
	// The full node is not even looked at: the usage index walk starts
	// at nodes with 2 free GPUs.
	m := fifth.Metrics
	if m.NodesEvaluated != 2 || m.NodesExhausted != 0 || len(m.ScoreMetaData) != 2 || m.ScoreMetaData[0].NodeID != fifth.NodeID {
		t.Errorf("metric: got evaluated %d exhausted %d scores %d, want 2 evaluated, none exhausted, 2 scored, best first",
			m.NodesEvaluated, m.NodesExhausted, len(m.ScoreMetaData))
	}
}

func TestCPUJobAvoidsGPUNodes(t *testing.T) {
	h := schedtest.NewHarness(t)
	gpuNode := schedtest.Node("gpu-1", 4, "", 80)
	cpuNode := schedtest.Node("cpu-1", 0, "", 0)
	h.UpsertNode(gpuNode)
	h.UpsertNode(cpuNode)

	process(t, h, h.RegisterJob(schedtest.ServiceJob("web", 1)))
	a := onlyAlloc(t, h, "web")
	if a.NodeID != cpuNode.ID {
		t.Fatalf("node: got %s, want the CPU-only node %s", a.NodeName, cpuNode.Name)
	}
	if s := a.Metrics.ScoreMetaData; len(s) != 2 || s[1].Scores["gpu-reserve"] != -1 {
		t.Errorf("scores: got %+v, want the GPU node penalised -1 by gpu-reserve", s)
	}
}
