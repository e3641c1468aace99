package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestServer_QueuesShareEqually (issue #7, must-hold 4): two queues of
// equal weight each submit 40 single-GPU batch jobs onto 8 GPUs; through
// the real broker, workers and plan applier, each holds 4 GPUs (±1)
// while both have work waiting, as allocations finish one by one.
func TestServer_QueuesShareEqually(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 4))
	registerNode(t, c, gpuNode("n2", 4))
	for _, q := range []string{"a", "b"} {
		req := &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: q, Weight: 1}}
		if err := s.RPC(structs.RPCQueueUpsert, req, &structs.GenericResponse{}); err != nil {
			t.Fatalf("upsert queue %s: %v", q, err)
		}
	}
	queueOf := map[string]string{}
	for i := range 40 {
		for _, q := range []string{"a", "b"} {
			job := gpuJob(fmt.Sprintf("%s-%d", q, i), structs.JobTypeBatch, 1, 1)
			job.Queue = q
			registerJob(t, s, job)
			queueOf[job.ID] = q
		}
	}
	held := func() (map[string]int, []*structs.Allocation) {
		out := map[string]int{}
		var live []*structs.Allocation
		allocs, err := s.State().Allocs(nil, "*")
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range allocs {
			if !a.TerminalStatus() {
				out[queueOf[a.JobID]]++
				live = append(live, a)
			}
		}
		return out, live
	}
	settled := func(when string) []*structs.Allocation {
		t.Helper()
		var live []*structs.Allocation
		waitFor(t, 10*time.Second, func() (bool, string) {
			var got map[string]int
			got, live = held()
			if got["a"] > 5 || got["b"] > 5 {
				t.Fatalf("%s: GPUs held %v, one queue over its share by more than 1", when, got)
			}
			ok := got["a"]+got["b"] == 8 && got["a"] >= 3
			return ok, fmt.Sprintf("%s: GPUs held %v, want 4 each (±1) of 8", when, got)
		})
		return live
	}
	live := settled("after submission")
	for round := range 12 {
		// Finish the oldest live allocation.
		oldest := live[0]
		for _, a := range live {
			if a.CreateIndex < oldest.CreateIndex {
				oldest = a
			}
		}
		done := oldest.Copy()
		done.ClientStatus = structs.AllocClientStatusComplete
		if err := c.Call(structs.RPCNodeUpdateAlloc, allocUpdate(t, s, []*structs.Allocation{done}), &structs.GenericResponse{}); err != nil {
			t.Fatalf("Node.UpdateAlloc: %v", err)
		}
		live = settled(fmt.Sprintf("round %d", round))
	}
}
