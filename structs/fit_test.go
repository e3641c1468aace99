package structs

import (
	"testing"
)

// fitNode returns a ready node with 4000 MHz, 8192 MB and four GPUs, the
// last one unhealthy.
func fitNode() *Node {
	gpus := &NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3"}
	for i, id := range []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3"} {
		gpus.Instances = append(gpus.Instances, &NodeDevice{ID: id, Healthy: i < 3})
	}
	return &Node{
		ID:     "node-1",
		Status: NodeStatusReady,
		NodeResources: &NodeResources{
			Cpu:     NodeCpuResources{CpuShares: 4000},
			Memory:  NodeMemoryResources{MemoryMB: 8192},
			Devices: []*NodeDeviceResource{gpus},
		},
	}
}

// fitAlloc returns a running allocation holding cpu, memory and GPUs.
func fitAlloc(id string, cpu, mem int64, gpus ...string) *Allocation {
	task := &AllocatedTaskResources{
		Cpu:    AllocatedCpuResources{CpuShares: cpu},
		Memory: AllocatedMemoryResources{MemoryMB: mem},
	}
	if len(gpus) > 0 {
		task.Devices = []*AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3", DeviceIDs: gpus}}
	}
	return &Allocation{
		ID:                 id,
		DesiredStatus:      AllocDesiredStatusRun,
		ClientStatus:       AllocClientStatusRunning,
		AllocatedResources: &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{"t": task}},
	}
}

func stopped(a *Allocation) *Allocation {
	a.DesiredStatus = AllocDesiredStatusStop
	return a
}

func completed(a *Allocation) *Allocation {
	a.ClientStatus = AllocClientStatusComplete
	return a
}

func TestAllocsFit(t *testing.T) {
	tests := []struct {
		name    string
		node    func() *Node
		allocs  []*Allocation
		wantFit bool
		wantDim string
	}{
		{"empty", fitNode, nil, true, ""},
		{"exactly full", fitNode, []*Allocation{
			fitAlloc("a", 2000, 4096, "GPU-0"), fitAlloc("b", 2000, 4096, "GPU-1", "GPU-2"),
		}, true, ""},
		{"cpu over", fitNode, []*Allocation{fitAlloc("a", 3000, 10), fitAlloc("b", 1001, 10)}, false, "cpu"},
		{"memory over", fitNode, []*Allocation{fitAlloc("a", 10, 8193)}, false, "memory"},
		{"terminal allocs free capacity", fitNode, []*Allocation{
			stopped(fitAlloc("a", 4000, 8192, "GPU-0")), completed(fitAlloc("b", 4000, 8192, "GPU-0")),
			fitAlloc("c", 4000, 8192, "GPU-0"),
		}, true, ""},
		{"gpu held twice", fitNode, []*Allocation{fitAlloc("a", 1, 1, "GPU-1"), fitAlloc("b", 1, 1, "GPU-1")},
			false, "devices: instance GPU-1 already held"},
		{"gpu not on node", fitNode, []*Allocation{fitAlloc("a", 1, 1, "GPU-9")}, false, "devices: instance GPU-9 not on node"},
		{"unhealthy gpu still fits", fitNode, []*Allocation{fitAlloc("a", 1, 1, "GPU-3")}, true, ""},
		{"no resources", func() *Node { return &Node{ID: "bare"} }, nil, false, "node has no resources"},
		{"no devices", func() *Node {
			n := fitNode()
			n.NodeResources.Devices = nil
			return n
		}, []*Allocation{fitAlloc("a", 1, 1, "GPU-0")}, false, "devices: instance GPU-0 not on node"},
		{"alloc without resources", fitNode, []*Allocation{{ID: "x", DesiredStatus: AllocDesiredStatusRun}}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fit, dim := AllocsFit(tt.node(), tt.allocs)
			if fit != tt.wantFit || dim != tt.wantDim {
				t.Errorf("got (%v, %q), want (%v, %q)", fit, dim, tt.wantFit, tt.wantDim)
			}
		})
	}
}

// TestAllocsFitSameAllocTwice: an allocation listed twice (the plan
// applier may see the existing and the updated copy) does not conflict
// with itself on its devices.
func TestAllocsFitSameAllocTwice(t *testing.T) {
	a := fitAlloc("a", 1, 1, "GPU-0")
	if fit, dim := AllocsFit(fitNode(), []*Allocation{a, a.Copy()}); !fit {
		t.Errorf("got (%v, %q), want fit", fit, dim)
	}
}

func TestNodeDeviceProblem(t *testing.T) {
	tests := []struct {
		name  string
		node  *Node
		alloc *Allocation
		want  string
	}{
		{"healthy", fitNode(), fitAlloc("a", 1, 1, "GPU-0", "GPU-2"), ""},
		{"no devices", fitNode(), fitAlloc("a", 1, 1), ""},
		{"unhealthy", fitNode(), fitAlloc("a", 1, 1, "GPU-0", "GPU-3"), "devices: instance GPU-3 unhealthy"},
		{"missing", fitNode(), fitAlloc("a", 1, 1, "GPU-7"), "devices: instance GPU-7 not on node"},
		{"node without resources", &Node{ID: "bare"}, fitAlloc("a", 1, 1, "GPU-0"), "devices: instance GPU-0 not on node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.node.DeviceProblem(tt.alloc); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNodeGPUCount(t *testing.T) {
	n := fitNode()
	n.NodeResources.Devices = append(n.NodeResources.Devices, &NodeDeviceResource{
		Vendor: "xilinx", Type: "fpga", Name: "u250", Instances: []*NodeDevice{{ID: "F-0", Healthy: true}},
	})
	if total, healthy := n.GPUCount(); total != 4 || healthy != 3 {
		t.Errorf("got %d total, %d healthy; want 4, 3 (FPGAs not counted)", total, healthy)
	}
}
