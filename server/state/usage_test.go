package state

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

func gpuTestNode(id string, gpus int) *structs.Node {
	n := testNode(id)
	g := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "H100",
		Attributes: map[string]string{structs.DeviceAttrMemory: "80 GiB"}}
	for i := range gpus {
		g.Instances = append(g.Instances, &structs.NodeDevice{ID: id + "-gpu" + string(rune('0'+i)), Healthy: true})
	}
	n.NodeResources.Devices = []*structs.NodeDeviceResource{g}
	return n
}

func withDevices(a *structs.Allocation, cpu int64, devs ...*structs.AllocatedDeviceResource) *structs.Allocation {
	a.AllocatedResources = &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
		"t": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Devices: devs},
	}}
	return a
}

func TestUsageFollowsAllocations(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeBatch)
	must(t, s.UpsertNode(1, gpuTestNode("n1", 3)))
	must(t, s.UpsertJob(2, job))
	whole := withDevices(testAlloc("a1", job, "n1", "e"), 1000, &structs.AllocatedDeviceResource{DeviceIDs: []string{"n1-gpu0"}})
	slice := withDevices(testAlloc("a2", job, "n1", "e"), 500, &structs.AllocatedDeviceResource{DeviceIDs: []string{"n1-gpu1"}, Compute: 30, MemoryMB: 1024})
	must(t, s.UpsertAllocs(3, []*structs.Allocation{whole, slice}))

	u, err := s.NodeUsage(nil, "n1")
	must(t, err)
	if u.CPU != 1500 || u.Allocs != 2 || u.FreeGPUs != 1 || u.MaxFreeCompute != 100 {
		t.Fatalf("usage = cpu %d allocs %d free %d maxfree %d, want 1500 2 1 100", u.CPU, u.Allocs, u.FreeGPUs, u.MaxFreeCompute)
	}
	if got := u.Devices["n1-gpu1"]; got.Slices != 1 || got.Compute != 30 || got.MemoryMB != 1024 {
		t.Errorf("gpu1 use = %+v, want one 30%% / 1024 MB slice", got)
	}

	// The whole-GPU holder finishes: its GPU is free again.
	must(t, s.UpdateAllocsFromClient(4, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusComplete}}))
	u, err = s.NodeUsage(nil, "n1")
	must(t, err)
	if u.CPU != 500 || u.FreeGPUs != 2 || u.Devices["n1-gpu0"] != (structs.DeviceUse{}) {
		t.Errorf("after completion: cpu %d free %d gpu0 %+v, want 500, 2, unused", u.CPU, u.FreeGPUs, u.Devices["n1-gpu0"])
	}

	// A GPU turns unhealthy: it is no longer free.
	n := gpuTestNode("n1", 3)
	n.NodeResources.Devices[0].Instances[2].Healthy = false
	must(t, s.UpsertNode(5, n))
	u, err = s.NodeUsage(nil, "n1")
	must(t, err)
	if u.FreeGPUs != 1 || u.Node.NodeResources.Devices[0].Instances[2].Healthy {
		t.Errorf("after gpu2 failed: free %d, want 1 (and the new node version)", u.FreeGPUs)
	}

	// The index walk meets nodes with at least 1 free GPU, fullest first.
	must(t, s.UpsertNode(6, gpuTestNode("n2", 4)))
	var order []string
	must(t, s.UsageFrom(IndexFreeGPUs, 1, func(u *structs.NodeUsage) bool { order = append(order, u.NodeID); return true }))
	if len(order) != 2 || order[0] != "n1" || order[1] != "n2" {
		t.Errorf("walk from 1 free GPU = %v, want [n1 n2]", order)
	}
	var slices []string
	must(t, s.UsageFrom(IndexMaxFreeCompute, 50, func(u *structs.NodeUsage) bool { slices = append(slices, u.NodeID); return true }))
	if len(slices) != 2 {
		t.Errorf("walk from 50%% free compute = %v, want both nodes", slices)
	}
}

func TestUsageRebuiltOnRestore(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeBatch)
	node := gpuTestNode("n1", 2)
	a := withDevices(testAlloc("a1", job, "n1", "e"), 1000, &structs.AllocatedDeviceResource{DeviceIDs: []string{"n1-gpu0"}})
	a.ClientStatus = structs.AllocClientStatusRunning
	r, err := s.Restore()
	must(t, err)
	must(t, r.NodeRestore(node))
	must(t, r.JobRestore(job))
	must(t, r.AllocRestore(a))
	must(t, r.Commit())
	u, err := s.NodeUsage(nil, "n1")
	must(t, err)
	if u == nil || u.CPU != 1000 || u.FreeGPUs != 1 {
		t.Fatalf("usage after restore = %+v, want cpu 1000 and 1 free GPU", u)
	}
}
