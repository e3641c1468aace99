package server

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestNode_GetRendezvousACL: a node reads the peers of a gang allocation
// it runs (with their rendezvous ports), and nothing with another node's
// allocation, a wrong secret, or no secret.
func TestNode_GetRendezvousACL(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	n1, n2 := gpuNode("n1", 0), gpuNode("n2", 0)
	registerNode(t, c, n1)
	registerNode(t, c, n2)
	job := gpuJob("ddp", structs.JobTypeBatch, 2, 0)
	job.TaskGroups[0].Tasks[0].Resources.Devices = nil
	job.TaskGroups[0].Gang = &structs.Gang{Min: 2}
	job.Canonicalize()
	registerJob(t, s, job)
	var allocs []*structs.Allocation
	waitFor(t, 10*time.Second, func() (bool, string) {
		allocs = liveAllocs(t, s, "ddp")
		return len(allocs) == 2, "gang not placed"
	})
	ask := func(node *structs.Node, secret, allocID string) (*structs.RendezvousResponse, error) {
		var resp structs.RendezvousResponse
		err := c.Call(structs.RPCNodeGetRendezvous, &structs.RendezvousRequest{NodeID: node.ID, NodeSecret: secret, AllocID: allocID}, &resp)
		return &resp, err
	}
	a := allocs[0]
	owner, other := n1, n2
	if a.NodeID == n2.ID {
		owner, other = n2, n1
	}
	resp, err := ask(owner, owner.SecretID, a.ID)
	if err != nil || resp.Count != 2 || len(resp.Peers) != 2 {
		t.Fatalf("owner reads its gang's peers: %+v, %v; want 2 peers of count 2", resp, err)
	}
	seen := map[int]bool{}
	for _, p := range resp.Peers {
		if p.Port == 0 {
			t.Errorf("peer %d has no rendezvous port: %+v", p.Index, p)
		}
		seen[p.Index] = true
	}
	if !seen[0] || !seen[1] {
		t.Errorf("peer ranks %v, want 0 and 1", seen)
	}
	// A node registered after the placement runs none of the job.
	n3 := gpuNode("n3", 0)
	registerNode(t, c, n3)
	for _, x := range allocs {
		if _, err := ask(n3, n3.SecretID, x.ID); err == nil || !strings.Contains(err.Error(), "not on node") {
			t.Errorf("a node running none of the job reads its peers: %v, want permission denied", err)
		}
	}
	if _, err := ask(other, other.SecretID, a.ID); err == nil {
		t.Error("a node asks with another node's allocation: want refused")
	}
	if _, err := ask(owner, other.SecretID, a.ID); err == nil {
		t.Error("wrong node secret: want refused")
	}
	if _, err := ask(owner, "", a.ID); err == nil {
		t.Error("no node secret: want refused")
	}
	if _, err := ask(owner, owner.SecretID, structs.GenerateUUID()); err == nil {
		t.Error("unknown allocation: want refused")
	}
}
