package feasible

import (
	"slices"
	"testing"

	"github.com/droverhq/drover/server/scheduler/frag"
	"github.com/droverhq/drover/structs"
)

// slicing returns an allocation of another job holding compute percent
// (and memMB) of each instance.
func slicing(id string, compute int, memMB uint64, ids ...string) *structs.Allocation {
	a := holding(ids...)
	a.ID = id
	d := a.AllocatedResources.Tasks["t"].Devices[0]
	d.Compute, d.MemoryMB = compute, memMB
	return a
}

func TestSelectWalksFullestFirstAndStopsAtLimit(t *testing.T) {
	var nodes []*structs.Node
	byNode := map[string][]*structs.Allocation{}
	// n0 has 4 free GPUs, n1 3, n2 2, n3 1, n4 none.
	for i, held := range [][]string{nil, {"n1-0"}, {"n1-0", "n1-1"}, {"n1-0", "n1-1", "n1-2"}, {"n1-0", "n1-1", "n1-2", "n1-3"}} {
		id := string(rune('0' + i))
		n := readyNode("n"+id, gpuGroup("n1", "H100", 4))
		nodes = append(nodes, n)
		if held != nil {
			byNode[n.ID] = []*structs.Allocation{holding(held...)}
		}
	}
	job := gpuJob(&structs.RequestedDevice{Name: "nvidia/gpu", Count: 2})
	s := NewStack(job, job.TaskGroups[0], "seed", WithLimit(2), WithAlgorithm(AlgorithmBinpack))
	view := newListView(nodes, byNode)
	opt, m, err := s.Select(view)
	if err != nil || opt == nil {
		t.Fatalf("select: %v %v", opt, err)
	}
	if opt.Node.ID != "n2" {
		t.Errorf("chosen: got %s, want n2 (the fullest with 2 free)", opt.Node.ID)
	}
	if want := []string{"n2", "n1"}; !slices.Equal(view.walked, want) {
		t.Errorf("walked: got %v, want %v (fullest first, stopped after 2 feasible)", view.walked, want)
	}
	if m.NodesEvaluated != 2 {
		t.Errorf("evaluated: got %d, want 2", m.NodesEvaluated)
	}
}

func TestSelectFailureWalksEveryNode(t *testing.T) {
	a := readyNode("a", gpuGroup("a", "H100", 2))
	b := readyNode("b", gpuGroup("b", "H100", 2))
	c := readyNode("cpu-only")
	job := gpuJob(&structs.RequestedDevice{Name: "nvidia/gpu", Count: 2})
	s := NewStack(job, job.TaskGroups[0], "seed")
	view := newListView([]*structs.Node{a, b, c}, map[string][]*structs.Allocation{
		"a": {holding("a-0")}, "b": {holding("b-1")},
	})
	opt, m, err := s.Select(view)
	if err != nil || opt != nil {
		t.Fatalf("select: got %v %v, want no option", opt, err)
	}
	if m.NodesEvaluated != 3 || m.NodesExhausted != 2 || m.NodesFiltered != 1 {
		t.Errorf("metric: evaluated %d exhausted %d filtered %d, want 3 2 1 (every node explained)", m.NodesEvaluated, m.NodesExhausted, m.NodesFiltered)
	}
	if m.DimensionExhausted["devices: nvidia/gpu: 1 of 2 free, need 2"] != 2 {
		t.Errorf("exhausted: got %v", m.DimensionExhausted)
	}
	if m.ConstraintFiltered["device nvidia/gpu not available"] != 1 {
		t.Errorf("filtered: got %v", m.ConstraintFiltered)
	}

	// A node that could never hold the ask says so.
	job = gpuJob(&structs.RequestedDevice{Name: "nvidia/gpu", Count: 3})
	s = NewStack(job, job.TaskGroups[0], "seed")
	if _, m, _ = s.Select(view); m.DimensionExhausted["devices: nvidia/gpu: node has 2 matching, need 3"] != 2 {
		t.Errorf("exhausted: got %v, want both GPU nodes too small", m.DimensionExhausted)
	}
}

func TestSlicesNeverExceedOneGPU(t *testing.T) {
	g := gpuGroup("g", "H100", 1) // 80 GiB
	node := readyNode("n", g)
	tests := []struct {
		name    string
		req     *structs.RequestedDevice
		held    []*structs.Allocation
		want    string // instance chosen, "" for none
		exhaust string
	}{
		{name: "slice of a free GPU", req: &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Compute: 25}, want: "g-0"},
		{name: "three quarters held, a quarter fits",
			req:  &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Compute: 25},
			held: []*structs.Allocation{slicing("x", 75, 0, "g-0")}, want: "g-0"},
		{name: "full by compute",
			req:     &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Compute: 25},
			held:    []*structs.Allocation{slicing("x", 50, 0, "g-0"), slicing("y", 30, 0, "g-0")},
			exhaust: "devices: nvidia/gpu: no GPU with 25% compute free"},
		{name: "full by GPU memory",
			req:     &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, MemoryMB: 20 * 1024},
			held:    []*structs.Allocation{slicing("a", 0, 20*1024, "g-0"), slicing("b", 0, 20*1024, "g-0"), slicing("c", 0, 20*1024, "g-0"), slicing("d", 0, 20*1024, "g-0")},
			exhaust: "devices: nvidia/gpu: GPU memory exhausted, need 20 GiB free on one GPU"},
		{name: "a whole GPU is not shared",
			req:     &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Compute: 10},
			held:    []*structs.Allocation{holding("g-0")},
			exhaust: "devices: nvidia/gpu: no GPU with 10% compute free"},
		{name: "a sliced GPU is not free whole",
			req:     &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1},
			held:    []*structs.Allocation{slicing("x", 10, 0, "g-0")},
			exhaust: "devices: nvidia/gpu: 0 of 1 free, need 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := gpuJob(tt.req)
			s := NewStack(job, job.TaskGroups[0], "seed")
			opt, m, err := s.Select(newListView([]*structs.Node{node}, map[string][]*structs.Allocation{"n": tt.held}))
			if err != nil {
				t.Fatalf("select: %v", err)
			}
			if tt.exhaust != "" {
				if opt != nil || m.DimensionExhausted[tt.exhaust] != 1 {
					t.Fatalf("got option %v, exhausted %v; want exhausted %q", opt != nil, m.DimensionExhausted, tt.exhaust)
				}
				return
			}
			if opt == nil {
				t.Fatalf("no option: %+v", m)
			}
			d := opt.Resources.Tasks["t"].Devices[0]
			if d.DeviceIDs[0] != tt.want || d.Compute != tt.req.Compute || d.MemoryMB != tt.req.MemoryMB {
				t.Errorf("got %v compute %d memory %d, want %s with the slice asked", d.DeviceIDs, d.Compute, d.MemoryMB, tt.want)
			}
			// What the plan applier re-checks agrees.
			placed := &structs.Allocation{ID: "new", DesiredStatus: "run", ClientStatus: "pending", AllocatedResources: opt.Resources}
			if ok, dim := structs.AllocsFit(node, append(slices.Clone(tt.held), placed)); !ok {
				t.Errorf("AllocsFit refuses the choice: %s", dim)
			}
		})
	}
}

func TestSliceGoesToTightestGPU(t *testing.T) {
	node := readyNode("n", gpuGroup("g", "H100", 3))
	held := []*structs.Allocation{slicing("x", 50, 0, "g-0"), slicing("y", 80, 0, "g-2")}
	job := gpuJob(&structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Compute: 20})
	s := NewStack(job, job.TaskGroups[0], "seed")
	opt, _, err := s.Select(newListView([]*structs.Node{node}, map[string][]*structs.Allocation{"n": held}))
	if err != nil || opt == nil {
		t.Fatalf("select: %v %v", opt, err)
	}
	if got := opt.Resources.Tasks["t"].Devices[0].DeviceIDs; !slices.Equal(got, []string{"g-2"}) {
		t.Errorf("got %v, want [g-2] (20%% left there, whole g-1 kept free)", got)
	}
}

// TestFragmentationDecides: a quarter-GPU task could go to a node whose
// only partly used GPU has room, or to a node with four free GPUs. With a
// workload of whole-GPU tasks, breaking a free GPU fragments it; the
// fragmentation stage picks the partly used one even though bin-packing
// alone scores the busier node the same or worse.
func TestFragmentationDecides(t *testing.T) {
	partly := readyNode("partly", gpuGroup("p", "H100", 4))
	fresh := readyNode("fresh", gpuGroup("f", "H100", 4))
	byNode := map[string][]*structs.Allocation{"partly": {slicing("x", 50, 0, "p-0")}}
	workload := frag.Workload{
		{GPUs: 1, Compute: frag.Whole, Weight: 0.5},
		{GPUs: 2, Compute: frag.Whole, Weight: 0.5},
	}
	job := gpuJob(&structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Compute: 25})
	for _, seed := range []string{"a", "b", "c", "d"} {
		s := NewStack(job, job.TaskGroups[0], seed, WithWorkload(workload), WithLimit(0))
		opt, _, err := s.Select(newListView([]*structs.Node{fresh, partly}, byNode))
		if err != nil || opt == nil {
			t.Fatalf("select: %v %v", opt, err)
		}
		if opt.Node.ID != "partly" || opt.Resources.Tasks["t"].Devices[0].DeviceIDs[0] != "p-0" {
			t.Errorf("seed %s: got %s %v, want partly p-0 (scores %v)", seed, opt.Node.ID, opt.Resources.Tasks["t"].Devices[0].DeviceIDs, opt.Scores)
		}
	}
}
