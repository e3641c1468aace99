package scheduler_test

import (
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// TestEphemeralDiskCountedAgainstNodeDisk: on a node reporting 1000 MB
// of disk, two 400 MB ephemeral disks fit and the third does not, for
// want of disk; a node reporting none counts nothing.
func TestEphemeralDiskCountedAgainstNodeDisk(t *testing.T) {
	h := schedtest.NewHarness(t)
	n := schedtest.Node("a", 0, "", 0)
	n.NodeResources.Disk.DiskMB = 1000
	h.UpsertNode(n)
	job := schedtest.ServiceJob("disk", 3)
	job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 400}

	process(t, h, h.RegisterJob(job))

	allocs := h.LiveAllocs(ns, "disk")
	if len(allocs) != 2 {
		t.Fatalf("placed %d, want 2", len(allocs))
	}
	if got := allocs[0].AllocatedResources.Shared.DiskMB; got != 400 {
		t.Errorf("allocated disk: got %d MB, want 400", got)
	}
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.ServiceTask]
	if m == nil || m.DimensionExhausted["disk"] != 1 {
		t.Errorf("metric: got %+v, want the node exhausted on disk", m)
	}

	unreported := schedtest.Node("b", 0, "", 0)
	h.UpsertNode(unreported)
	process(t, h, h.NewEval(job, structs.EvalTriggerNodeUpdate))
	if got := len(h.LiveAllocs(ns, "disk")); got != 3 {
		t.Errorf("with a node reporting no disk: placed %d, want 3", got)
	}
}

// TestUpdateRecordsPreviousAllocation: a destructive update's
// replacement names the allocation it replaces, for a sticky ephemeral
// disk's data to follow it.
func TestUpdateRecordsPreviousAllocation(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("a", 0, "", 0))
	job := schedtest.ServiceJob("sticky", 1)
	job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 100, Sticky: true}
	process(t, h, h.RegisterJob(job))
	old := h.LiveAllocs(ns, "sticky")
	if len(old) != 1 || old[0].PreviousAllocation != "" {
		t.Fatalf("first placement: got %+v", old)
	}

	job = job.Copy()
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"7200"}}
	process(t, h, h.RegisterJob(job))

	live := h.LiveAllocs(ns, "sticky")
	if len(live) != 1 || live[0].ID == old[0].ID {
		t.Fatalf("after the update: got %d live allocations, want one new one", len(live))
	}
	if got := live[0].PreviousAllocation; got != old[0].ID {
		t.Errorf("PreviousAllocation: got %q, want %q", got, old[0].ID)
	}
}

// TestStickyReplacementStaysOnItsNode: an update's replacement of a
// group with a sticky ephemeral disk goes back to its node, though
// bin-packing prefers the fuller node the job without sticky goes to.
func TestStickyReplacementStaysOnItsNode(t *testing.T) {
	for _, sticky := range []bool{true, false} {
		h := schedtest.NewHarness(t)
		a := schedtest.Node("a", 0, "", 0)
		h.UpsertNode(a)
		job := schedtest.ServiceJob("cache", 1)
		job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 100, Sticky: sticky}
		process(t, h, h.RegisterJob(job))
		b := schedtest.Node("b", 0, "", 0)
		h.UpsertNode(b)
		filler := schedtest.ServiceJob("filler", 1)
		filler.Constraints = []*structs.Constraint{{LTarget: "${node.unique.name}", Operand: "=", RTarget: "b"}}
		process(t, h, h.RegisterJob(filler))

		job = job.Copy()
		job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"7200"}}
		process(t, h, h.RegisterJob(job))

		want := b.ID
		if sticky {
			want = a.ID
		}
		if got := onlyAlloc(t, h, "cache"); got.NodeID != want {
			t.Errorf("sticky %v: replacement on %s, want %s", sticky, got.NodeID, want)
		}
	}
}
