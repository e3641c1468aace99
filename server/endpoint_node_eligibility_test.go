package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestNodeUpdateEligibility: node:write may set a node ineligible, which
// keeps the scheduler off it (a job's evaluation blocks); setting it
// eligible again places the blocked job. Bad values and unknown nodes
// are refused.
func TestNodeUpdateEligibility(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	n1 := gpuNode("n1", 1)
	registerNode(t, dialRPC(t, s.RPCAddr()), n1)
	set := func(token, node, elig string) (*structs.NodeEligibilityUpdateResponse, error) {
		req := &structs.NodeUpdateEligibilityRequest{NodeID: node, Eligibility: elig}
		req.AuthToken = token
		var resp structs.NodeEligibilityUpdateResponse
		return &resp, s.RPC(structs.RPCNodeUpdateEligibility, req, &resp)
	}

	reader := clientToken(t, s, mgmt, "node-reader", `node { policy = "read" }`)
	if _, err := set(reader.SecretID, n1.ID, structs.NodeSchedulingIneligible); !isDenied(err) {
		t.Errorf("with node:read: %v, want permission denied", err)
	}
	writer := clientToken(t, s, mgmt, "node-writer", `node { policy = "write" }`)
	if _, err := set(writer.SecretID, n1.ID, "maybe"); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("eligibility maybe: %v, want invalid", err)
	}
	if _, err := set(writer.SecretID, "nope", structs.NodeSchedulingIneligible); !errors.Is(err, structs.ErrUnknownNode) {
		t.Errorf("unknown node: %v, want unknown node", err)
	}
	resp, err := set(writer.SecretID, n1.ID, structs.NodeSchedulingIneligible)
	if err != nil {
		t.Fatal(err)
	}
	node, err := s.State().NodeByID(nil, n1.ID)
	if err != nil || node.SchedulingEligibility != structs.NodeSchedulingIneligible || node.ModifyIndex != resp.NodeModifyIndex {
		t.Fatalf("stored node %+v (%v), want ineligible at index %d", node, err, resp.NodeModifyIndex)
	}

	reg := &structs.JobRegisterRequest{Job: gpuJob("train", structs.JobTypeBatch, 1, 1)}
	reg.AuthToken = mgmt
	var rr structs.JobRegisterResponse
	call(t, s, structs.RPCJobRegister, reg, &rr)
	waitFor(t, 10*time.Second, func() (bool, string) {
		e := evalByID(t, s, rr.EvalID)
		return e != nil && e.Status == structs.EvalStatusComplete, fmt.Sprintf("eval %+v not complete", e)
	})
	if live := liveAllocs(t, s, "train"); len(live) != 0 {
		t.Fatalf("placed %d allocations on an ineligible node", len(live))
	}

	if _, err := set(writer.SecretID, n1.ID, structs.NodeSchedulingEligible); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		return len(liveAllocs(t, s, "train")) == 1, "train not placed once n1 is eligible"
	})
}
