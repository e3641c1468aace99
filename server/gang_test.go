package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestServer_GangPlacedInOnePlan (issue #7, must-hold 2): a gang of 4
// single-GPU allocations on a cluster with 3 free GPUs places nothing and
// holds a reservation; when a fourth GPU frees, all 4 are placed by one
// evaluation at one Raft index, and the reservation is released.
func TestServer_GangPlacedInOnePlan(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 2))
	registerNode(t, c, gpuNode("n2", 2))
	registerJob(t, s, gpuJob("filler", structs.JobTypeBatch, 1, 1))
	waitFor(t, 5*time.Second, func() (bool, string) {
		n := len(liveAllocs(t, s, "filler"))
		return n == 1, fmt.Sprintf("filler has %d live allocs", n)
	})

	gang := gpuJob("ddp", structs.JobTypeBatch, 4, 1)
	gang.TaskGroups[0].Gang = &structs.Gang{Min: 4}
	gang.Canonicalize()
	registerJob(t, s, gang)
	waitFor(t, 5*time.Second, func() (bool, string) {
		res, err := s.State().ReservationByJob(structs.DefaultNamespace, "ddp")
		if err != nil {
			t.Fatal(err)
		}
		return res != nil, "no reservation for the waiting gang yet"
	})
	if n := len(liveAllocs(t, s, "ddp")); n != 0 {
		t.Fatalf("gang placed %d allocations with 3 GPUs free, want none", n)
	}

	// The filler completes: its GPU frees.
	done := liveAllocs(t, s, "filler")[0].Copy()
	done.ClientStatus = structs.AllocClientStatusComplete
	if err := c.Call(structs.RPCNodeUpdateAlloc, allocUpdate(t, s, []*structs.Allocation{done}), &structs.GenericResponse{}); err != nil {
		t.Fatalf("Node.UpdateAlloc: %v", err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := len(liveAllocs(t, s, "ddp"))
		return n == 4, fmt.Sprintf("gang has %d live allocs, want 4", n)
	})
	live := liveAllocs(t, s, "ddp")
	for _, a := range live[1:] {
		if a.CreateIndex != live[0].CreateIndex || a.EvalID != live[0].EvalID {
			t.Errorf("alloc %s: index %d eval %s; want all at %d by %s", a.ID, a.CreateIndex, a.EvalID, live[0].CreateIndex, live[0].EvalID)
		}
	}
	if res, _ := s.State().ReservationByJob(structs.DefaultNamespace, "ddp"); res != nil {
		t.Errorf("reservation kept after the gang was placed: %+v", res)
	}
}

// TestServer_ReservationExpiryWakesBlockedJobs: a job blocked by a gang's
// reservation is placed once the reservation expires, though no
// allocation changed.
func TestServer_ReservationExpiryWakesBlockedJobs(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 2))
	registerJob(t, s, gpuJob("filler", structs.JobTypeBatch, 1, 1))
	gang := gpuJob("ddp", structs.JobTypeBatch, 2, 2)
	gang.TaskGroups[0].Gang = &structs.Gang{Min: 2, Timeout: time.Second}
	gang.Canonicalize()
	registerJob(t, s, gang)
	waitFor(t, 5*time.Second, func() (bool, string) {
		res, _ := s.State().ReservationByJob(structs.DefaultNamespace, "ddp")
		return res != nil, "no reservation yet"
	})
	registerJob(t, s, gpuJob("small", structs.JobTypeBatch, 1, 1))
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := len(liveAllocs(t, s, "small"))
		return n == 1, fmt.Sprintf("small has %d live allocs, want 1 once the reservation expired", n)
	})
}
