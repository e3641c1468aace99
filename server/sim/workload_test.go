package sim

import (
	"reflect"
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestNode(t *testing.T) {
	n := Node(NodeSpec{Name: "n1", CPUMilli: 96000, MemoryMiB: 786432, GPUs: 2, Model: "V100M16"})
	if !n.Ready() || n.Datacenter != Datacenter || !n.Drivers["raw_exec"].Detected {
		t.Errorf("got ready %t, datacenter %q, raw_exec %+v; want a ready node in %s with raw_exec", n.Ready(), n.Datacenter, n.Drivers["raw_exec"], Datacenter)
	}
	if got := n.NodeResources.Cpu.CpuShares; got != 96000 {
		t.Errorf("got CpuShares %d, want 96000", got)
	}
	if got := n.NodeResources.Memory.MemoryMB; got != 786432 {
		t.Errorf("got MemoryMB %d, want 786432", got)
	}
	if len(n.NodeResources.Devices) != 1 {
		t.Fatalf("got %d device groups, want 1", len(n.NodeResources.Devices))
	}
	g := n.NodeResources.Devices[0]
	if g.ID() != "nvidia/gpu/V100M16" || g.Attributes[structs.DeviceAttrMemory] != "16 GiB" || g.Attributes[structs.DeviceAttrSimulated] != "true" {
		t.Errorf("got group %s with attributes %v, want nvidia/gpu/V100M16, 16 GiB, simulated", g.ID(), g.Attributes)
	}
	var ids []string
	for _, inst := range g.Instances {
		if !inst.Healthy {
			t.Errorf("instance %s unhealthy, want healthy", inst.ID)
		}
		ids = append(ids, inst.ID)
	}
	if want := []string{"GPU-n1-00", "GPU-n1-01"}; !slices.Equal(ids, want) {
		t.Errorf("got instances %v, want %v", ids, want)
	}
	if n.ID != Node(NodeSpec{Name: "n1"}).ID || n.ID == Node(NodeSpec{Name: "n2"}).ID {
		t.Errorf("node IDs are not deterministic per name")
	}
	if cpu := Node(NodeSpec{Name: "c", CPUMilli: 1000}); cpu.NodeResources.Devices != nil {
		t.Errorf("got devices %v on a CPU-only node, want none", cpu.NodeResources.Devices)
	}
}

func TestJob(t *testing.T) {
	tests := []struct {
		name string
		pod  PodSpec
		want []*structs.RequestedDevice
	}{
		{"cpu only", PodSpec{Name: "p", CPUMilli: 2000, MemoryMiB: 512}, nil},
		{"whole GPUs", PodSpec{Name: "p", CPUMilli: 2000, MemoryMiB: 512, NumGPU: 4, GPUMilli: 1000},
			[]*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 4}}},
		{"fraction", PodSpec{Name: "p", CPUMilli: 2000, MemoryMiB: 512, NumGPU: 1, GPUMilli: 250},
			[]*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1, Compute: 25}}},
		{"gpu spec", PodSpec{Name: "p", CPUMilli: 2000, MemoryMiB: 512, NumGPU: 1, GPUMilli: 1000, GPUSpec: []string{"V100M16", "V100M32"}},
			[]*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1, Constraints: []*structs.Constraint{
				{LTarget: "${device.model}", Operand: structs.ConstraintSetContainsAny, RTarget: "V100M16,V100M32"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := Job(tt.pod, 7)
			if err := job.Validate(); err != nil {
				t.Fatalf("validate: %v", err)
			}
			if job.ID != "p-7" || job.Type != structs.JobTypeBatch || len(job.TaskGroups) != 1 || job.TaskGroups[0].Count != 1 {
				t.Fatalf("got job %s of type %s with %d groups, want p-7, batch, one group of count 1", job.ID, job.Type, len(job.TaskGroups))
			}
			res := job.TaskGroups[0].Tasks[0].Resources
			if res.CPU != 2000 || res.MemoryMB != 512 {
				t.Errorf("got cpu %d, memory %d, want 2000, 512", res.CPU, res.MemoryMB)
			}
			if !reflect.DeepEqual(res.Devices, tt.want) {
				t.Errorf("got devices %+v, want %+v", res.Devices, tt.want)
			}
		})
	}
}

func TestArrivals(t *testing.T) {
	pods := []PodSpec{
		{Name: "a", NumGPU: 1, GPUMilli: 1000},
		{Name: "b", NumGPU: 1, GPUMilli: 500},
		{Name: "c"},
		{Name: "d", NumGPU: 2, GPUMilli: 1000},
	}
	names := func(ps []PodSpec) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	demand := func(ps []PodSpec) float64 {
		sum := 0.0
		for _, p := range ps {
			sum += p.GPUShare()
		}
		return sum
	}

	if got := names(Arrivals(pods, 4, 0, 1, 0)); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("without arrival: got %v, want file order", got)
	}
	if got := names(Arrivals(pods, 4, 0, 1, 2)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("with limit 2: got %v, want [a b]", got)
	}

	// 4 cluster GPUs × 2.5 = 10 GPUs of demand; one pass asks 3.5, so the
	// list is reshuffled twice, and the last pod crosses the target.
	got := Arrivals(pods, 4, 2.5, 1, 0)
	if d := demand(got); d < 10 || d-got[len(got)-1].GPUShare() >= 10 {
		t.Errorf("got demand %v over %d pods, want the last pod to cross 10", d, len(got))
	}
	if first := names(got[:4]); slices.Equal(first, []string{"a", "b", "c", "d"}) {
		t.Errorf("got first pass %v, want a shuffled order", first)
	}
	if again := Arrivals(pods, 4, 2.5, 1, 0); !reflect.DeepEqual(again, got) {
		t.Errorf("same seed: got %v, then %v; want the same order", names(got), names(again))
	}
	if other := Arrivals(pods, 4, 2.5, 2, 0); reflect.DeepEqual(other, got) {
		t.Errorf("seeds 1 and 2 gave the same order %v", names(got))
	}
	if got := Arrivals([]PodSpec{{Name: "cpu"}}, 4, 1.3, 1, 0); len(got) != 1 {
		t.Errorf("no GPU demand: got %d pods, want one pass of 1", len(got))
	}
	if got := Arrivals(pods, 4, 2.5, 1, 5); len(got) != 5 {
		t.Errorf("arrival with limit 5: got %d pods, want 5", len(got))
	}
}
