package state

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

// gpuAlloc returns a placed allocation of job on node holding the GPU
// instances ids, whole or (compute > 0) as slices.
func gpuAlloc(id string, job *structs.Job, node string, compute int, memMB uint64, ids ...string) *structs.Allocation {
	a := testAlloc(id, job, node, "e")
	a.AllocatedResources = &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
		"t": {
			Cpu:     structs.AllocatedCpuResources{CpuShares: 1000},
			Memory:  structs.AllocatedMemoryResources{MemoryMB: 512},
			Devices: []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: ids, Compute: compute, MemoryMB: memMB}},
		},
	}}
	return a
}

func nsJob(id, ns string) *structs.Job {
	j := testJob(id, structs.JobTypeBatch)
	j.Namespace = ns
	return j
}

func usageOfNS(t *testing.T, s *StateStore, ns string) structs.QuotaResources {
	t.Helper()
	u, err := s.NamespaceUsage(nil, ns)
	must(t, err)
	return u
}

func TestQuotaChargesFollowAllocations(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertNode(1, gpuTestNode("n1", 4)))
	job := nsJob("train", "team-a")
	must(t, s.UpsertJob(2, job))

	whole := gpuAlloc("a1", job, "n1", 0, 0, "n1-gpu0", "n1-gpu1")
	slice := gpuAlloc("a2", job, "n1", 25, 20480, "n1-gpu2")
	must(t, s.UpsertAllocs(3, []*structs.Allocation{whole, slice}))
	want := structs.QuotaResources{CPU: 2000, MemoryMB: 1024, GPUCompute: 225, GPUMemoryMB: 2*81920 + 20480}
	if got := usageOfNS(t, s, "team-a"); got != want {
		t.Fatalf("usage after two placements = %+v, want %+v", got, want)
	}
	if got := usageOfNS(t, s, "default"); !got.IsZero() {
		t.Errorf("default namespace usage = %+v, want nothing", got)
	}

	// Client updates that keep the allocation live change nothing.
	must(t, s.UpdateAllocsFromClient(4, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning}}))
	if got := usageOfNS(t, s, "team-a"); got != want {
		t.Errorf("usage after a running update = %+v, want %+v", got, want)
	}

	// The node changes its GPU memory and then leaves: the whole-GPU
	// allocation still gives back exactly what it was charged.
	n := gpuTestNode("n1", 4)
	n.NodeResources.Devices[0].Attributes[structs.DeviceAttrMemory] = "40 GiB"
	must(t, s.UpsertNode(5, n))
	must(t, s.DeleteNode(6, "n1"))
	must(t, s.UpdateAllocsFromClient(7, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusComplete}}))
	want = structs.QuotaResources{CPU: 1000, MemoryMB: 512, GPUCompute: 25, GPUMemoryMB: 20480}
	if got := usageOfNS(t, s, "team-a"); got != want {
		t.Errorf("usage after the whole-GPU allocation finished = %+v, want %+v", got, want)
	}

	// A stop from the servers releases the slice: nothing is left.
	stop := slice.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	must(t, s.UpsertAllocs(8, []*structs.Allocation{stop}))
	if got := usageOfNS(t, s, "team-a"); !got.IsZero() {
		t.Errorf("usage after everything stopped = %+v, want nothing", got)
	}
	if c, err := s.QuotaChargeOf("a2"); err != nil || c != nil {
		t.Errorf("charge of a stopped allocation = %+v, %v; want none", c, err)
	}
}

func TestQuotaUsageSumsItsNamespaces(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertNode(1, gpuTestNode("n1", 4)))
	must(t, s.UpsertQuotaSpecs(2, []*structs.QuotaSpec{testQuota("shared", 4)}))
	must(t, s.UpsertNamespaces(3, []*structs.Namespace{
		{Name: "team-a", Quota: "shared"}, {Name: "team-b", Quota: "shared"}, {Name: "team-c"},
	}))
	a, b, c := nsJob("a", "team-a"), nsJob("b", "team-b"), nsJob("c", "team-c")
	for i, j := range []*structs.Job{a, b, c} {
		must(t, s.UpsertJob(uint64(4+i), j))
	}
	must(t, s.UpsertAllocs(10, []*structs.Allocation{
		gpuAlloc("a1", a, "n1", 0, 0, "n1-gpu0"),
		gpuAlloc("b1", b, "n1", 50, 0, "n1-gpu1"),
		gpuAlloc("c1", c, "n1", 0, 0, "n1-gpu2"),
	}))
	u, err := s.QuotaUsage(nil, "shared")
	must(t, err)
	if u == nil || u.Used.GPUCompute != 150 || len(u.Namespaces) != 2 || u.Namespaces[0] != "team-a" || u.Namespaces[1] != "team-b" {
		t.Fatalf("usage of shared = %+v, want 1.5 GPUs of team-a and team-b", u)
	}
	if u, err := s.QuotaUsage(nil, "nope"); err != nil || u != nil {
		t.Errorf("usage of an unknown quota = %+v, %v; want nil", u, err)
	}
}

func TestQuotaChargesRebuiltOnRestore(t *testing.T) {
	s := newTestStore(t)
	job := nsJob("train", "team-a")
	done := gpuAlloc("a2", job, "n1", 0, 0, "n1-gpu1")
	done.ClientStatus = structs.AllocClientStatusComplete
	r, err := s.Restore()
	must(t, err)
	must(t, r.NodeRestore(gpuTestNode("n1", 2)))
	must(t, r.NamespaceRestore(&structs.Namespace{Name: "team-a", Quota: "q"}))
	must(t, r.QuotaSpecRestore(testQuota("q", 2)))
	must(t, r.JobRestore(job))
	must(t, r.AllocRestore(gpuAlloc("a1", job, "n1", 0, 0, "n1-gpu0")))
	must(t, r.AllocRestore(done))
	must(t, r.Commit())
	u, err := s.QuotaUsage(nil, "q")
	must(t, err)
	want := structs.QuotaResources{CPU: 1000, MemoryMB: 512, GPUCompute: 100, GPUMemoryMB: 81920}
	if u == nil || u.Used != want {
		t.Fatalf("usage after restore = %+v, want %+v", u, want)
	}
}
