package server

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

func summaryNode(id, status string, healthy ...bool) *structs.Node {
	g := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3",
		Attributes: map[string]string{structs.DeviceAttrMemory: "80 GiB"}}
	for i, h := range healthy {
		g.Instances = append(g.Instances, &structs.NodeDevice{ID: id + "-gpu-" + string(rune('0'+i)), Healthy: h})
	}
	return &structs.Node{ID: id, Name: id, Status: status, NodeResources: &structs.NodeResources{Devices: []*structs.NodeDeviceResource{g}}}
}

func TestSummarizeGPUs(t *testing.T) {
	nodes := []*structs.Node{
		summaryNode("a", structs.NodeStatusReady, true, true, false, true),
		summaryNode("b", structs.NodeStatusDown, true, true),
		{ID: "cpu-only", Status: structs.NodeStatusReady, NodeResources: &structs.NodeResources{}},
	}
	held := map[string]bool{"a-gpu-0": true, "a-gpu-2": true}
	got := summarizeGPUs(nodes, held)

	// a: 0 held, 1 free, 2 held+unhealthy, 3 free; b: down, so not free.
	if got.Total != 6 || got.Allocated != 2 || got.Free != 2 || got.Unhealthy != 1 {
		t.Errorf("totals: got total %d allocated %d free %d unhealthy %d, want 6 2 2 1", got.Total, got.Allocated, got.Free, got.Unhealthy)
	}
	if len(got.Models) != 1 || got.Models[0].MemoryBytes != 80<<30 || got.Models[0].Total != 6 {
		t.Errorf("models: got %+v, want one H100 model with 80 GiB and 6 GPUs", got.Models)
	}
	if len(got.Nodes) != 3 {
		t.Fatalf("nodes: got %d, want 3", len(got.Nodes))
	}
	if a := got.Nodes[0]; a.GPUs != 4 || a.Allocated != 2 || a.Unhealthy != 1 {
		t.Errorf("node a: got %+v, want 4 GPUs, 2 allocated, 1 unhealthy", a)
	}
	if c := got.Nodes[2]; c.GPUs != 0 {
		t.Errorf("cpu-only node: got %d GPUs, want 0", c.GPUs)
	}
}
