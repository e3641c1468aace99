package server

import (
	"errors"
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestNodeJobsExist(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 1)
	registerNode(t, c, node)
	other := gpuNode("n2", 1)
	registerNode(t, c, other)
	registerJob(t, s, gpuJob("train", structs.JobTypeBatch, 1, 1))

	req := &structs.NodeJobsExistRequest{NodeID: node.ID, SecretID: node.SecretID, Jobs: []structs.JobRef{
		{Namespace: "default", JobID: "train"}, {Namespace: "default", JobID: "gone"}, {Namespace: "other", JobID: "train"},
	}}
	var resp structs.NodeJobsExistResponse
	if err := c.Call(structs.RPCNodeJobsExist, req, &resp); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, false}; !slices.Equal(resp.Exists, want) {
		t.Errorf("Exists = %v, want %v", resp.Exists, want)
	}

	forged := &structs.NodeJobsExistRequest{NodeID: node.ID, SecretID: other.SecretID, Jobs: req.Jobs}
	if err := c.Call(structs.RPCNodeJobsExist, forged, &resp); !isDenied(structs.DecodeRPCError(err)) {
		t.Errorf("another node's secret: %v, want permission denied", err)
	}
	big := &structs.NodeJobsExistRequest{NodeID: node.ID, SecretID: node.SecretID, Jobs: make([]structs.JobRef, structs.MaxJobsExist+1)}
	if err := c.Call(structs.RPCNodeJobsExist, big, &resp); !errors.Is(structs.DecodeRPCError(err), structs.ErrInvalid) {
		t.Errorf("%d jobs: %v, want invalid", structs.MaxJobsExist+1, err)
	}
}
