package server

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/structs"
)

// liveNodes returns the sorted node IDs of the job's live allocations.
func liveNodes(t *testing.T, s *Server, jobID string) []string {
	t.Helper()
	var ids []string
	for _, a := range liveAllocs(t, s, jobID) {
		ids = append(ids, a.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// TestServer_SystemJobFollowsNodes: a system job gets an allocation on a
// node registered after it; when that node goes down its allocation is
// lost and not placed elsewhere, and when it heartbeats again it gets a
// new one.
func TestServer_SystemJobFollowsNodes(t *testing.T) {
	t.Parallel()
	if _, err := scheduler.New(structs.JobTypeSystem, nil, nil, nil); errors.Is(err, scheduler.ErrNotSupported) {
		t.Skip("scheduler.New does not route system jobs to the SystemScheduler yet")
	}
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	// Two GPUs each: a replacement elsewhere would fit, and must not come.
	n1, n2 := gpuNode("n1", 2), gpuNode("n2", 2)
	registerNode(t, c, n1)
	registerJob(t, s, gpuJob("agent", structs.JobTypeSystem, 1, 1))
	waitFor(t, 5*time.Second, func() (bool, string) {
		got := liveNodes(t, s, "agent")
		return slices.Equal(got, []string{n1.ID}), fmt.Sprintf("live on %v, want only n1", got)
	})

	registerNode(t, c, n2)
	both := []string{n1.ID, n2.ID}
	slices.Sort(both)
	waitFor(t, 5*time.Second, func() (bool, string) {
		got := liveNodes(t, s, "agent")
		return slices.Equal(got, both), fmt.Sprintf("live on %v, want n1 and n2", got)
	})

	setStatus := func(status string) {
		t.Helper()
		req := &structs.NodeUpdateStatusRequest{NodeID: n2.ID, SecretID: n2.SecretID, Status: status}
		if err := c.Call(structs.RPCNodeUpdateStatus, req, &structs.NodeUpdateResponse{}); err != nil {
			t.Fatalf("Node.UpdateStatus(%s): %v", status, err)
		}
	}
	live := liveAllocs(t, s, "agent")
	lost := live[slices.IndexFunc(live, func(a *structs.Allocation) bool { return a.NodeID == n2.ID })]
	setStatus(structs.NodeStatusDown)
	waitFor(t, 5*time.Second, func() (bool, string) {
		a, err := s.State().AllocByID(nil, lost.ID)
		if err != nil {
			t.Fatal(err)
		}
		return a.ClientStatus == structs.AllocClientStatusLost, "n2's allocation is " + a.ClientStatus + ", want lost"
	})
	if got := liveNodes(t, s, "agent"); !slices.Equal(got, []string{n1.ID}) {
		t.Errorf("live on %v after n2 went down, want only n1", got)
	}

	setStatus(structs.NodeStatusReady)
	waitFor(t, 5*time.Second, func() (bool, string) {
		got := liveNodes(t, s, "agent")
		return slices.Equal(got, both), fmt.Sprintf("live on %v, want n1 and n2 again", got)
	})
}
