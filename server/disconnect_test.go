package server

import (
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestServer_DisconnectedAllocUnknownThenBack: a node whose allocation's
// group has disconnect { lost_after } misses its heartbeats: the node
// goes down and the allocation turns unknown, still meant to run, not
// replaced (replace = false); the node comes back and the same
// allocation runs on, never lost.
func TestServer_DisconnectedAllocUnknownThenBack(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HeartbeatTTL = 300 * time.Millisecond
	s := startServer(t, cfg)
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 1)
	registerNode(t, c, node)
	heartbeat := func() error {
		req := &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID, Status: structs.NodeStatusReady}
		return c.Call(structs.RPCNodeUpdateStatus, req, &structs.NodeUpdateResponse{})
	}
	job := gpuJob("web", structs.JobTypeService, 1, 1)
	no := false
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour, Replace: &no}
	registerJob(t, s, job)
	var orig *structs.Allocation
	waitFor(t, 5*time.Second, func() (bool, string) {
		if err := heartbeat(); err != nil {
			return false, err.Error()
		}
		live := liveAllocs(t, s, "web")
		if len(live) == 1 {
			orig = live[0]
		}
		return orig != nil, "allocation not placed"
	})

	// Silence: the node goes down, the allocation is unknown, not lost.
	waitFor(t, 5*time.Second, func() (bool, string) {
		n, _ := s.State().NodeByID(nil, node.ID)
		a, _ := s.State().AllocByID(nil, orig.ID)
		return n.Status == structs.NodeStatusDown && a.ClientStatus == structs.AllocClientStatusUnknown,
			"node " + n.Status + ", allocation " + a.ClientStatus
	})
	a, _ := s.State().AllocByID(nil, orig.ID)
	if a.DesiredStatus != structs.AllocDesiredStatusRun || len(liveAllocs(t, s, "web")) != 1 {
		t.Fatalf("unknown allocation: desired %s, %d live; want it alone and still meant to run", a.DesiredStatus, len(liveAllocs(t, s, "web")))
	}

	// Back: the node is ready and the same allocation runs on.
	if err := heartbeat(); err != nil {
		t.Fatalf("heartbeat after down: %v", err)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		n, _ := s.State().NodeByID(nil, node.ID)
		return n.Status == structs.NodeStatusReady, "node " + n.Status
	})
	live := liveAllocs(t, s, "web")
	if len(live) != 1 || live[0].ID != orig.ID {
		t.Errorf("after the node came back: %d live allocations, want the original %s", len(live), orig.ID)
	}
}
