package feasible

import (
	"fmt"
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

// gpuGroup returns n GPUs of model whose IDs are "<prefix>-<i>", NVLink
// paired 0-1, 2-3, ..., on NUMA node i*2/n, other GPUs of a NUMA node on
// a shared PCIe switch.
func gpuGroup(prefix, model string, n int) *structs.NodeDeviceResource {
	g := &structs.NodeDeviceResource{
		Vendor: "nvidia", Type: "gpu", Name: model,
		Attributes: map[string]string{"memory": "80 GiB", "compute_capability": "9.0"},
	}
	id := func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) }
	numa := func(i int) int { return i * 2 / n }
	for i := range n {
		inst := &structs.NodeDevice{
			ID: id(i), Healthy: true,
			Attributes: map[string]string{"numa_node": fmt.Sprint(numa(i))},
			Links:      map[string]string{},
		}
		for j := range n {
			switch {
			case j == i:
			case j == i^1:
				inst.Links[id(j)] = structs.LinkNVLink
			case numa(j) == numa(i):
				inst.Links[id(j)] = structs.LinkPCIeSwitch
			default:
				inst.Links[id(j)] = structs.LinkSystem
			}
		}
		g.Instances = append(g.Instances, inst)
	}
	return g
}

func readyNode(id string, groups ...*structs.NodeDeviceResource) *structs.Node {
	return &structs.Node{
		ID: id, Name: id, Datacenter: "dc1", Status: structs.NodeStatusReady,
		Attributes: map[string]string{"driver.raw_exec": "1"},
		Meta:       map[string]string{},
		NodeResources: &structs.NodeResources{
			Cpu:     structs.NodeCpuResources{CpuShares: 32000},
			Memory:  structs.NodeMemoryResources{MemoryMB: 65536},
			Devices: groups,
		},
	}
}

func gpuJob(devices ...*structs.RequestedDevice) *structs.Job {
	job := &structs.Job{
		ID: "j", Type: structs.JobTypeBatch, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Resources: &structs.Resources{CPU: 1000, MemoryMB: 1024, Devices: devices}}},
		}},
	}
	job.Canonicalize()
	return job
}

// holding returns an allocation of another job holding the device IDs.
func holding(ids ...string) *structs.Allocation {
	return &structs.Allocation{
		ID: "other", JobID: "other", TaskGroup: "g", DesiredStatus: "run", ClientStatus: "running",
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Devices: []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: ids}}},
		}},
	}
}

func TestTopologyPicker(t *testing.T) {
	g := gpuGroup("g", "H100", 8)
	refs := func(idx ...int) []instanceRef {
		var out []instanceRef
		for _, i := range idx {
			out = append(out, instanceRef{group: g, inst: g.Instances[i], pos: i})
		}
		return out
	}
	tests := []struct {
		name     string
		free     []int
		count    int
		topology string
		want     []int // nil = no set
	}{
		{name: "pair on a fresh node", free: []int{0, 1, 2, 3, 4, 5, 6, 7}, count: 2, want: []int{0, 1}},
		{name: "whole pair over lowest IDs", free: []int{1, 2, 3}, count: 2, want: []int{2, 3}},
		{name: "single takes a broken pair's GPU", free: []int{1, 2, 3}, count: 1, want: []int{1}},
		{name: "single on a fresh node", free: []int{0, 1, 2, 3}, count: 1, want: []int{0}},
		{name: "four stay on one NUMA node", free: []int{0, 1, 2, 3, 4, 5, 6, 7}, count: 4, want: []int{0, 1, 2, 3}},
		{name: "nvlink beats pcie switch", free: []int{0, 2, 4, 5}, count: 2, want: []int{4, 5}},
		{name: "all", free: []int{5, 6, 7}, count: 3, want: []int{5, 6, 7}},
		{name: "nvlink required and present", free: []int{0, 2, 3}, count: 2, topology: "nvlink", want: []int{2, 3}},
		{name: "nvlink required, none", free: []int{0, 2, 4}, count: 2, topology: "nvlink", want: nil},
		{name: "numa required", free: []int{3, 4, 5}, count: 2, topology: "numa", want: []int{4, 5}},
		{name: "numa required, none", free: []int{3, 4}, count: 2, topology: "numa", want: nil},
		{name: "too few", free: []int{3}, count: 2, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TopologyPicker{}.Pick(refs(tt.free...), tt.count, tt.topology, newLinkMatrix(g.Instances))
			var gotIdx []int
			for _, r := range got {
				gotIdx = append(gotIdx, slices.Index(g.Instances, r.inst))
			}
			if !slices.Equal(gotIdx, tt.want) {
				t.Errorf("pick: got %v, want %v", gotIdx, tt.want)
			}
		})
	}
}

func TestDeviceFitAcrossGroups(t *testing.T) {
	a, b := gpuGroup("a", "NVIDIA H100 80GB HBM3", 2), gpuGroup("b", "NVIDIA A100-SXM4-40GB", 2)
	b.Attributes["memory"] = "40 GiB"
	a.Instances[1].Attributes["memory"] = "20 GiB" // a MIG-like instance overrides its group
	node := readyNode("n1", a, b)
	tests := []struct {
		name    string
		req     *structs.RequestedDevice
		held    []string
		want    map[string][]string // group name -> IDs
		exhaust string
	}{
		{
			name: "spans groups",
			req:  &structs.RequestedDevice{Name: "nvidia/gpu", Count: 4},
			want: map[string][]string{"NVIDIA H100 80GB HBM3": {"a-0", "a-1"}, "NVIDIA A100-SXM4-40GB": {"b-0", "b-1"}},
		},
		{
			name: "model without vendor word",
			req:  &structs.RequestedDevice{Name: "nvidia/gpu/A100-SXM4-40GB", Count: 2},
			want: map[string][]string{"NVIDIA A100-SXM4-40GB": {"b-0", "b-1"}},
		},
		{
			name: "instance attribute overrides group",
			req: &structs.RequestedDevice{Name: "gpu", Count: 1, Constraints: []*structs.Constraint{
				{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "30 GiB"},
			}},
			held: []string{"a-0"},
			want: map[string][]string{"NVIDIA A100-SXM4-40GB": {"b-0"}},
		},
		{
			name:    "held instances are not free",
			req:     &structs.RequestedDevice{Name: "nvidia/gpu", Count: 3},
			held:    []string{"a-0", "b-1"},
			exhaust: "devices: nvidia/gpu: 2 of 4 free, need 3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStack(gpuJob(tt.req), gpuJob(tt.req).TaskGroups[0], "seed")
			var proposed []*structs.Allocation
			if tt.held != nil {
				proposed = append(proposed, holding(tt.held...))
			}
			opt, m, err := s.Select(newListView([]*structs.Node{node}, map[string][]*structs.Allocation{"n1": proposed}))
			if err != nil {
				t.Fatalf("select: %v", err)
			}
			if tt.exhaust != "" {
				if opt != nil || m.DimensionExhausted[tt.exhaust] != 1 {
					t.Fatalf("got option %v metric %+v, want exhausted %q", opt != nil, m, tt.exhaust)
				}
				return
			}
			if opt == nil {
				t.Fatalf("no option: metric %+v", m)
			}
			got := map[string][]string{}
			for _, d := range opt.Resources.Tasks["t"].Devices {
				got[d.Name] = d.DeviceIDs
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("devices: got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStackSelectMetrics(t *testing.T) {
	down := readyNode("down", gpuGroup("d", "H100", 4))
	down.Status = structs.NodeStatusDown
	busy := readyNode("busy", gpuGroup("b", "H100", 4))
	free := readyNode("free", gpuGroup("f", "H100", 4))
	other := readyNode("other-dc", gpuGroup("o", "H100", 4))
	other.Datacenter = "dc2"
	job := gpuJob(&structs.RequestedDevice{Name: "nvidia/gpu", Count: 2})
	s := NewStack(job, job.TaskGroups[0], "seed", WithLimit(0))
	view := newListView([]*structs.Node{down, busy, free, other}, map[string][]*structs.Allocation{"busy": {holding("b-0", "b-1", "b-2")}})
	opt, m, err := s.Select(view)
	if err != nil {
		t.Fatalf("select: %v", err)
	}
	if opt == nil || opt.Node.ID != "free" {
		t.Fatalf("option: got %+v, want node free", opt)
	}
	if m.NodesEvaluated != 4 || m.NodesFiltered != 2 || m.NodesExhausted != 1 {
		t.Errorf("counts: got evaluated %d filtered %d exhausted %d, want 4 2 1", m.NodesEvaluated, m.NodesFiltered, m.NodesExhausted)
	}
	wantFiltered := map[string]int{ReasonNodeNotReady: 1, ReasonMissingDatacenter: 1}
	if fmt.Sprint(m.ConstraintFiltered) != fmt.Sprint(wantFiltered) {
		t.Errorf("filtered: got %v, want %v", m.ConstraintFiltered, wantFiltered)
	}
	if m.DimensionExhausted["devices: nvidia/gpu: 1 of 4 free, need 2"] != 1 {
		t.Errorf("exhausted: got %v", m.DimensionExhausted)
	}
	if m.NodesAvailable["dc1"] != 2 || m.NodesAvailable["dc2"] != 1 {
		t.Errorf("available: got %v, want dc1 2, dc2 1", m.NodesAvailable)
	}
	if len(m.ScoreMetaData) != 1 || m.ScoreMetaData[0].NodeID != "free" || m.ScoreMetaData[0].Scores["binpack"] <= 0 {
		t.Errorf("scores: got %+v", m.ScoreMetaData)
	}
}

func TestAffinitiesDecide(t *testing.T) {
	h100 := readyNode("h100", gpuGroup("h", "NVIDIA H100 80GB HBM3", 4))
	a100 := readyNode("a100", gpuGroup("a", "NVIDIA A100-SXM4-80GB", 4))
	a100.Meta["zone"] = "a"
	tests := []struct {
		name string
		job  func() *structs.Job
		want string
	}{
		{
			name: "device affinity for H100",
			job: func() *structs.Job {
				return gpuJob(&structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Affinities: []*structs.Affinity{
					{LTarget: "${device.model}", Operand: "regexp", RTarget: "H100", Weight: 50},
				}})
			},
			want: "h100",
		},
		{
			name: "device anti-affinity for H100",
			job: func() *structs.Job {
				return gpuJob(&structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Affinities: []*structs.Affinity{
					{LTarget: "${device.model}", Operand: "regexp", RTarget: "H100", Weight: -50},
				}})
			},
			want: "a100",
		},
		{
			name: "node affinity for zone a",
			job: func() *structs.Job {
				j := gpuJob(&structs.RequestedDevice{Name: "nvidia/gpu", Count: 1})
				j.Affinities = []*structs.Affinity{{LTarget: "${meta.zone}", Operand: "=", RTarget: "a", Weight: 100}}
				return j
			},
			want: "a100",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, seed := range []string{"s1", "s2", "s3", "s4"} {
				job := tt.job()
				s := NewStack(job, job.TaskGroups[0], seed)
				opt, _, err := s.Select(newListView([]*structs.Node{h100, a100}, nil))
				if err != nil || opt == nil {
					t.Fatalf("select: got %v %v", opt, err)
				}
				if opt.Node.ID != tt.want {
					t.Errorf("seed %s: got node %s, want %s (scores %v)", seed, opt.Node.ID, tt.want, opt.Scores)
				}
			}
		})
	}
}

func TestKeepTop(t *testing.T) {
	var top []*Candidate
	for i, score := range []float64{0.1, 0.9, 0.5, 0.3, 0.7, 0.2, 0.8} {
		top = keepTop(top, &Candidate{score: score, tie: uint64(i)})
	}
	var got []float64
	for _, c := range top {
		got = append(got, c.score)
	}
	if want := []float64{0.9, 0.8, 0.7, 0.5, 0.3}; !slices.Equal(got, want) {
		t.Errorf("top: got %v, want %v", got, want)
	}
}
