package scheduler_test

import (
	"strconv"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// sharedNode returns a schedtest node of gpus 80 GiB H100s, each in
// sharing mode.
func sharedNode(name string, gpus int, mode string) *structs.Node {
	n := schedtest.Node(name, gpus, "", 80)
	for _, inst := range n.NodeResources.Devices[0].Instances {
		inst.Attributes[structs.DeviceAttrSharing] = mode
	}
	return n
}

// sliceJob is schedtest.GPUJob with count allocations asking a slice of
// one GPU.
func sliceJob(id string, count int, compute int, memMB uint64) *structs.Job {
	job := schedtest.GPUJob(id, count, 1)
	d := job.TaskGroups[0].Tasks[0].Resources.Devices[0]
	d.Compute, d.MemoryMB = compute, memMB
	return job
}

// Must-hold 1, scheduler side: one 80 GiB GPU in mps mode takes four
// 20 GiB slices on the same GPU; the fifth waits, blocked, with a reason
// that names GPU memory.
func TestMPSNodeTakesFourQuartersAndTheFifthWaitsOnGPUMemory(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := sharedNode("mps-1", 1, structs.SharingMPS)
	h.UpsertNode(node)

	process(t, h, h.RegisterJob(sliceJob("quarters", 5, 0, 20<<10)))

	live := h.LiveAllocs(ns, "quarters")
	if len(live) != 4 {
		t.Fatalf("placed: got %d allocations, want 4", len(live))
	}
	gpu := node.NodeResources.Devices[0].Instances[0].ID
	for _, a := range live {
		d := a.AllocatedResources.Tasks[schedtest.GPUGroup].Devices[0]
		if len(d.DeviceIDs) != 1 || d.DeviceIDs[0] != gpu || d.MemoryMB != 20<<10 {
			t.Errorf("alloc %s holds %v (%d MB), want a 20 GiB slice of %s", a.Name, d.DeviceIDs, d.MemoryMB, gpu)
		}
	}
	e := lastUpdate(t, h)
	m := e.FailedTGAllocs[schedtest.GPUGroup]
	const want = "devices: nvidia/gpu: GPU memory exhausted, need 20 GiB free on one GPU"
	if m == nil || m.DimensionExhausted[want] != 1 {
		t.Fatalf("failed placement: got %+v, want exhausted %q", m, want)
	}
	if e.BlockedEval == "" {
		t.Errorf("eval: no blocked eval, want the fifth allocation waiting")
	}
}

func TestExclusiveNodesExplainThatNoGPUAllowsSharing(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(sharedNode("excl-1", 4, structs.SharingExclusive))
	h.UpsertNode(sharedNode("excl-2", 4, structs.SharingExclusive))

	process(t, h, h.RegisterJob(sliceJob("slice", 1, 25, 20<<10)))

	if n := len(h.LiveAllocs(ns, "slice")); n != 0 {
		t.Fatalf("placed %d slices on exclusive GPUs, want 0", n)
	}
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]
	const want = "devices: nvidia/gpu: no GPU allows sharing (mode exclusive)"
	if m == nil || m.DimensionExhausted[want] != 2 {
		t.Fatalf("failed placement: got %+v, want both nodes exhausted with %q", m, want)
	}

	// A sharing node joins: the slice goes there.
	h.UpsertNode(sharedNode("ts-1", 1, structs.SharingTimeSlicing))
	process(t, h, h.RegisterJob(sliceJob("slice2", 1, 25, 20<<10)))
	if a := onlyAlloc(t, h, "slice2"); a.NodeName != "ts-1" {
		t.Errorf("slice placed on %s, want ts-1", a.NodeName)
	}
}

func TestMIGNodeGivesEachSliceTheSmallestFreeInstance(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := schedtest.Node("mig-1", 0, "", 0)
	group := func(profile string, memGiB, compute int, ids ...string) *structs.NodeDeviceResource {
		g := &structs.NodeDeviceResource{
			Vendor: "nvidia", Type: "gpu", Name: schedtest.H100 + " MIG " + profile,
			Attributes: map[string]string{structs.DeviceAttrMemory: structs.FormatBytes(uint64(memGiB) << 30), structs.DeviceAttrMIGProfile: profile},
		}
		for _, id := range ids {
			g.Instances = append(g.Instances, &structs.NodeDevice{ID: id, Healthy: true, Attributes: map[string]string{
				structs.DeviceAttrSharing: structs.SharingMIG, structs.DeviceAttrMIGProfile: profile, structs.DeviceAttrMIGCompute: strconv.Itoa(compute),
			}})
		}
		return g
	}
	node.NodeResources.Devices = []*structs.NodeDeviceResource{
		group("3g.40gb", 40, 42, "MIG-big"),
		group("1g.10gb", 10, 14, "MIG-small-0", "MIG-small-1"),
	}
	h.UpsertNode(node)

	// Three 8 GiB slices: the two small instances, then the big one.
	process(t, h, h.RegisterJob(sliceJob("small", 3, 0, 8<<10)))
	got := map[string]bool{}
	for _, a := range h.LiveAllocs(ns, "small") {
		d := a.AllocatedResources.Tasks[schedtest.GPUGroup].Devices[0]
		if d.Slice() {
			t.Errorf("alloc %s holds a slice of %v, want the MIG instance whole", a.Name, d.DeviceIDs)
		}
		got[d.DeviceIDs[0]] = true
	}
	if len(got) != 3 || !got["MIG-small-0"] || !got["MIG-small-1"] || !got["MIG-big"] {
		t.Fatalf("instances: got %v, want each of the three once", got)
	}

	// Every instance is held: the next one waits. The node has no compute
	// free at all, so the stack's walk explains it from its usage alone
	// (feasible's TestMIGPicksTheSmallestFreeInstanceThatFits covers the
	// MIG reasons of a node it walks).
	process(t, h, h.RegisterJob(sliceJob("more", 1, 0, 8<<10)))
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]
	const want = "devices: nvidia/gpu: no GPU with 1% compute free"
	if m == nil || m.NodesExhausted != 1 || m.DimensionExhausted[want] != 1 {
		t.Fatalf("failed placement: got %+v, want exhausted %q", m, want)
	}
}
