package feasible

import (
	"fmt"
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

// sharedGroup returns gpuGroup's n 80 GiB H100s with every instance in
// sharing mode.
func sharedGroup(prefix string, n int, mode string) *structs.NodeDeviceResource {
	g := gpuGroup(prefix, "H100", n)
	for _, inst := range g.Instances {
		inst.Attributes[structs.DeviceAttrSharing] = mode
	}
	return g
}

// migGroup returns a group of MIG instances of one profile, named like
// the NVML fingerprint names them, each taking compute percent of its GPU.
func migGroup(prefix, profile string, memGiB, compute, n int) *structs.NodeDeviceResource {
	g := &structs.NodeDeviceResource{
		Vendor: "nvidia", Type: "gpu", Name: "H100 MIG " + profile,
		Attributes: map[string]string{
			structs.DeviceAttrMemory:     fmt.Sprintf("%d GiB", memGiB),
			structs.DeviceAttrMIGProfile: profile,
		},
	}
	for i := range n {
		g.Instances = append(g.Instances, &structs.NodeDevice{
			ID: fmt.Sprintf("MIG-%s-%d", prefix, i), Healthy: true,
			Attributes: map[string]string{
				structs.DeviceAttrSharing:    structs.SharingMIG,
				structs.DeviceAttrMIGProfile: profile,
				structs.DeviceAttrMIGCompute: fmt.Sprint(compute),
			},
		})
	}
	return g
}

// placeSlices places one allocation of job at a time on node, as the
// scheduler does over several evaluations, until one fails. It returns
// the instances chosen and the failed placement's metric.
func placeSlices(t *testing.T, node *structs.Node, req *structs.RequestedDevice, max int) ([]*structs.AllocatedDeviceResource, *structs.AllocMetric) {
	t.Helper()
	var held []*structs.Allocation
	var chosen []*structs.AllocatedDeviceResource
	for i := range max {
		job := gpuJob(req)
		s := NewStack(job, job.TaskGroups[0], "seed")
		opt, m, err := s.Select(newListView([]*structs.Node{node}, map[string][]*structs.Allocation{node.ID: held}))
		if err != nil {
			t.Fatalf("select %d: %v", i, err)
		}
		if opt == nil {
			return chosen, m
		}
		a := &structs.Allocation{ID: fmt.Sprint("a", i), DesiredStatus: "run", ClientStatus: "running", AllocatedResources: opt.Resources}
		held = append(held, a)
		if ok, dim := structs.AllocsFit(node, held); !ok {
			t.Fatalf("placement %d: the plan applier's check refuses it: %s", i, dim)
		}
		chosen = append(chosen, opt.Resources.Tasks["t"].Devices[0])
	}
	return chosen, nil
}

func TestExclusiveGPUsRefuseSlices(t *testing.T) {
	node := readyNode("n", sharedGroup("g", 2, structs.SharingExclusive))
	chosen, m := placeSlices(t, node, &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Compute: 25, MemoryMB: 20 << 10}, 1)
	if len(chosen) != 0 {
		t.Fatalf("placed a slice on an exclusive GPU: %+v", chosen[0])
	}
	const want = "devices: nvidia/gpu: no GPU allows sharing (mode exclusive)"
	if m.DimensionExhausted[want] != 1 {
		t.Errorf("exhausted: got %v, want %q", m.DimensionExhausted, want)
	}

	// A whole-GPU request still takes an exclusive GPU.
	if chosen, _ := placeSlices(t, node, &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1}, 3); len(chosen) != 2 {
		t.Errorf("whole GPUs placed: got %d, want 2", len(chosen))
	}
}

func TestSlicesSkipExclusiveGPUsOfAMixedNode(t *testing.T) {
	excl := sharedGroup("x", 1, structs.SharingExclusive)
	mps := sharedGroup("m", 1, structs.SharingMPS)
	mps.Name = "H100 NVL"
	node := readyNode("n", excl, mps)
	chosen, m := placeSlices(t, node, &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, MemoryMB: 40 << 10}, 5)
	if len(chosen) != 2 {
		t.Fatalf("placed %d 40 GiB slices, want 2 (both on the mps GPU)", len(chosen))
	}
	for _, d := range chosen {
		if d.DeviceIDs[0] != "m-0" || d.MemoryMB != 40<<10 {
			t.Errorf("chose %v (memory %d MB), want a 40 GiB slice of m-0", d.DeviceIDs, d.MemoryMB)
		}
	}
	// The mps GPU is full: its reason (GPU memory) explains, not the
	// exclusive one.
	if want := "devices: nvidia/gpu: GPU memory exhausted, need 40 GiB free on one GPU"; m.DimensionExhausted[want] != 1 {
		t.Errorf("exhausted: got %v, want %q", m.DimensionExhausted, want)
	}
}

func TestMPSPacksFourQuartersOfOneGPU(t *testing.T) {
	node := readyNode("n", sharedGroup("g", 1, structs.SharingMPS))
	chosen, m := placeSlices(t, node, &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, MemoryMB: 20 << 10}, 8)
	if len(chosen) != 4 {
		t.Fatalf("placed %d 20 GiB slices on one 80 GiB GPU, want 4", len(chosen))
	}
	for _, d := range chosen {
		if !slices.Equal(d.DeviceIDs, []string{"g-0"}) || d.MemoryMB != 20<<10 || !d.Slice() {
			t.Errorf("got %+v, want a 20 GiB slice of g-0", d)
		}
	}
	if want := "devices: nvidia/gpu: GPU memory exhausted, need 20 GiB free on one GPU"; m == nil || m.DimensionExhausted[want] != 1 {
		t.Errorf("fifth: got %+v, want exhausted %q", m, want)
	}
}

func TestMIGPicksTheSmallestFreeInstanceThatFits(t *testing.T) {
	small := migGroup("s", "1g.10gb", 10, 14, 2)
	mid := migGroup("m", "2g.20gb", 20, 28, 1)
	big := migGroup("b", "3g.40gb", 40, 42, 1)
	node := readyNode("n", big, small, mid)
	tests := []struct {
		name string
		req  *structs.RequestedDevice
		held []string
		want string // "" when nothing fits
		why  string
	}{
		{name: "memory picks the smallest that holds it", req: &structs.RequestedDevice{MemoryMB: 15 << 10}, want: "MIG-m-0"},
		{name: "tiny ask takes the smallest of all", req: &structs.RequestedDevice{MemoryMB: 1 << 10}, want: "MIG-s-0"},
		{name: "a held instance is skipped", req: &structs.RequestedDevice{MemoryMB: 1 << 10}, held: []string{"MIG-s-0"}, want: "MIG-s-1"},
		{name: "compute rules out small ones", req: &structs.RequestedDevice{Compute: 30}, want: "MIG-b-0"},
		{name: "next size up when the fit is held", req: &structs.RequestedDevice{MemoryMB: 15 << 10}, held: []string{"MIG-m-0"}, want: "MIG-b-0"},
		{name: "nothing large enough", req: &structs.RequestedDevice{MemoryMB: 50 << 10},
			why: "devices: nvidia/gpu: no MIG instance has 50 GiB"},
		{name: "large enough ones are held", req: &structs.RequestedDevice{MemoryMB: 30 << 10, Compute: 40}, held: []string{"MIG-b-0"},
			why: "devices: nvidia/gpu: every MIG instance with 30 GiB and 40% compute is held"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Name, tt.req.Count = "nvidia/gpu", 1
			job := gpuJob(tt.req)
			s := NewStack(job, job.TaskGroups[0], "seed")
			var held []*structs.Allocation
			for i, id := range tt.held {
				a := holding(id)
				a.ID = fmt.Sprint("held", i)
				held = append(held, a)
			}
			opt, m, err := s.Select(newListView([]*structs.Node{node}, map[string][]*structs.Allocation{"n": held}))
			if err != nil {
				t.Fatalf("select: %v", err)
			}
			if tt.want == "" {
				if opt != nil || m.DimensionExhausted[tt.why] != 1 {
					t.Fatalf("got option %v, exhausted %v; want exhausted %q", opt != nil, m.DimensionExhausted, tt.why)
				}
				return
			}
			if opt == nil {
				t.Fatalf("no option: %v", m.DimensionExhausted)
			}
			d := opt.Resources.Tasks["t"].Devices[0]
			if !slices.Equal(d.DeviceIDs, []string{tt.want}) {
				t.Errorf("chose %v, want %s", d.DeviceIDs, tt.want)
			}
			// The MIG instance is held whole, not as a slice.
			if d.Slice() {
				t.Errorf("allocation holds a slice (compute %d, memory %d MB) of a MIG instance, want it whole", d.Compute, d.MemoryMB)
			}
			placed := &structs.Allocation{ID: "new", DesiredStatus: "run", ClientStatus: "pending", AllocatedResources: opt.Resources}
			if ok, dim := structs.AllocsFit(node, append(held, placed)); !ok {
				t.Errorf("AllocsFit refuses the choice: %s", dim)
			}
		})
	}
}

func TestMIGBeforeSharedGPUs(t *testing.T) {
	node := readyNode("n", sharedGroup("g", 1, structs.SharingTimeSlicing), migGroup("s", "2g.20gb", 20, 28, 1))
	chosen, _ := placeSlices(t, node, &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, MemoryMB: 20 << 10}, 2)
	if len(chosen) != 2 {
		t.Fatalf("placed %d, want 2", len(chosen))
	}
	if chosen[0].DeviceIDs[0] != "MIG-s-0" || chosen[0].Slice() {
		t.Errorf("first: got %+v, want the MIG instance whole", chosen[0])
	}
	if chosen[1].DeviceIDs[0] != "g-0" || !chosen[1].Slice() {
		t.Errorf("second: got %+v, want a slice of the time-sliced GPU", chosen[1])
	}
}

func TestApplierCheckRefusesSlicesOfUnsharedInstances(t *testing.T) {
	tests := []struct {
		name, mode string
		want       string // "" fits
	}{
		{"mps", structs.SharingMPS, ""},
		{"time-slicing", structs.SharingTimeSlicing, ""},
		{"unsaid", "", ""},
		{"exclusive", structs.SharingExclusive, "devices: instance g-0 takes no slices (mode exclusive)"},
		{"mig", structs.SharingMIG, "devices: instance g-0 takes no slices (mode mig)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := gpuGroup("g", "H100", 1)
			if tt.mode != "" {
				g.Instances[0].Attributes[structs.DeviceAttrSharing] = tt.mode
			}
			ok, dim := structs.AllocsFit(readyNode("n", g), []*structs.Allocation{slicing("a", 25, 20<<10, "g-0")})
			if ok != (tt.want == "") || dim != tt.want {
				t.Errorf("got fit %t %q, want %q", ok, dim, tt.want)
			}
		})
	}
}

// A job that needs its share enforced constrains ${device.attr.sharing}.
func TestSharingConstraintKeepsSlicesOffTimeSlicedGPUs(t *testing.T) {
	ts := sharedGroup("t", 1, structs.SharingTimeSlicing)
	mps := sharedGroup("m", 1, structs.SharingMPS)
	mps.Name = "H100 NVL"
	req := &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, MemoryMB: 40 << 10, Constraints: []*structs.Constraint{
		{LTarget: "${device.attr.sharing}", Operand: "regexp", RTarget: "^(mps|mig)$"},
	}}
	chosen, m := placeSlices(t, readyNode("n", ts, mps), req, 5)
	if len(chosen) != 2 {
		t.Fatalf("placed %d, want 2 (both on the mps GPU)", len(chosen))
	}
	for _, d := range chosen {
		if d.DeviceIDs[0] != "m-0" {
			t.Errorf("chose %v, want m-0", d.DeviceIDs)
		}
	}
	if m == nil || m.NodesExhausted != 1 {
		t.Errorf("third: got %+v, want the node exhausted", m)
	}
}
