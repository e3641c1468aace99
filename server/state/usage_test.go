package state

import (
	"fmt"
	"slices"
	"testing"

	memdb "github.com/hashicorp/go-memdb"

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
	next, err := s.UsageFrom(IndexFreeGPUs, 1)
	must(t, err)
	for u := next(); u != nil; u = next() {
		order = append(order, u.NodeID)
	}
	if len(order) != 2 || order[0] != "n1" || order[1] != "n2" {
		t.Errorf("walk from 1 free GPU = %v, want [n1 n2]", order)
	}
	var sliced []string
	next, err = s.UsageFrom(IndexMaxFreeCompute, 50)
	must(t, err)
	for u := next(); u != nil; u = next() {
		sliced = append(sliced, u.NodeID)
	}
	if len(sliced) != 2 {
		t.Errorf("walk from 50%% free compute = %v, want both nodes", sliced)
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

// TestUsageOneTxnAllocsAndNode writes allocations and node changes in one
// transaction, in both orders: the usage row, written once at the end for
// the allocations, must hold them all and point at the node's last
// version, and must match a rebuild from scratch.
func TestUsageOneTxnAllocsAndNode(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeBatch)
	must(t, s.UpsertNode(1, gpuTestNode("n1", 4)))
	must(t, s.UpsertJob(2, job))
	gpu := func(id, dev string) *structs.Allocation {
		return withDevices(testAlloc(id, job, "n1", "e"), 100, &structs.AllocatedDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{dev}})
	}
	must(t, s.Write(3, func(tx *Txn) error {
		if err := tx.UpsertAllocs([]*structs.Allocation{gpu("a1", "n1-gpu0"), gpu("a2", "n1-gpu1")}); err != nil {
			return err
		}
		if err := tx.UpdateNodeStatus("n1", structs.NodeStatusDown, 3); err != nil {
			return err
		}
		return tx.UpsertAllocs([]*structs.Allocation{gpu("a3", "n1-gpu2")})
	}))
	u, err := s.NodeUsage(nil, "n1")
	must(t, err)
	if u.Allocs != 3 || u.CPU != 300 || u.FreeGPUs != 1 || u.Node.Status != structs.NodeStatusDown {
		t.Fatalf("usage = allocs %d cpu %d free %d status %q, want 3 300 1 down", u.Allocs, u.CPU, u.FreeGPUs, u.Node.Status)
	}
	row, err := first[*workloadRow](nil, s.db.Txn(false), TableWorkload, indexID, workloadRowID)
	must(t, err)
	if row == nil || row.Tally.Len() != 3 {
		t.Errorf("workload tally = %+v, want 3 single-GPU asks", row)
	}

	// The rows equal a rebuild from the allocations and nodes.
	must(t, s.write(func(txn *memdb.Txn) error { return rebuildUsage(txn) }))
	rebuilt, err := s.NodeUsage(nil, "n1")
	must(t, err)
	if rebuilt.Allocs != u.Allocs || rebuilt.CPU != u.CPU || rebuilt.FreeGPUs != u.FreeGPUs || rebuilt.Node != u.Node {
		t.Errorf("rebuilt usage %+v differs from the incremental %+v", rebuilt, u)
	}
}

// TestUsageDescendingWalk: the spread algorithm's walk meets the nodes
// with at least min free GPUs, most free first, and stops at min.
func TestUsageDescendingWalk(t *testing.T) {
	s := newTestStore(t)
	for i, gpus := range []int{3, 1, 4, 0, 2} {
		must(t, s.UpsertNode(uint64(i+1), gpuTestNode(fmt.Sprintf("n%d", gpus), gpus)))
	}
	var got []string
	next, err := s.UsageByFreeGPUsDesc(2)
	must(t, err)
	for u := next(); u != nil; u = next() {
		got = append(got, u.NodeID)
	}
	if want := []string{"n4", "n3", "n2"}; !slices.Equal(got, want) {
		t.Errorf("walk down to 2 free GPUs = %v, want %v", got, want)
	}
	got = got[:0]
	next, err = s.UsageByFreeComputeDesc(100)
	must(t, err)
	for u := next(); u != nil; u = next() {
		got = append(got, u.NodeID)
	}
	if len(got) != 4 || got[3] == "n0" {
		t.Errorf("walk down to a whole free GPU = %v, want the four nodes with one", got)
	}
}
