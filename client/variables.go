package client

import (
	"context"
	"time"

	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/structs"
)

// variableSource reads variables for the templates of allocations this
// client runs: the servers check the node's secret, that the allocation
// is on this node, and that the path is one the task may read.
type variableSource struct{ c *Client }

var _ allocrunner.VariableSource = variableSource{}

func (v variableSource) request(allocID, task, path string, minIndex uint64, wait time.Duration) *structs.VariablesAllocRequest {
	return &structs.VariablesAllocRequest{
		NodeID: v.c.NodeID(), NodeSecret: v.c.Node().SecretID, AllocID: allocID, Task: task, Path: path,
		QueryOptions: structs.QueryOptions{Region: v.c.cfg.Region, MinQueryIndex: minIndex, MaxQueryTime: wait, AllowStale: true},
	}
}

// ReadVariable implements allocrunner.VariableSource.
func (v variableSource) ReadVariable(ctx context.Context, allocID, task, path string, minIndex uint64, wait time.Duration) (*structs.VariableDecrypted, uint64, error) {
	var resp structs.VariablesAllocResponse
	err := v.c.rpc.callBlocking(ctx, wait, structs.RPCVariablesAllocRead, v.request(allocID, task, path, minIndex, wait), &resp)
	return resp.Data, resp.Index, err
}

// ListVariables implements allocrunner.VariableSource.
func (v variableSource) ListVariables(ctx context.Context, allocID, task, prefix string, minIndex uint64, wait time.Duration) ([]*structs.VariableDecrypted, uint64, error) {
	var resp structs.VariablesAllocResponse
	err := v.c.rpc.callBlocking(ctx, wait, structs.RPCVariablesAllocList, v.request(allocID, task, prefix, minIndex, wait), &resp)
	return resp.List, resp.Index, err
}

// taskFiles is the alloc runners' template and artifact configuration.
func (c *Client) taskFiles() allocrunner.TaskFilesConfig {
	return allocrunner.TaskFilesConfig{
		Variables:       variableSource{c},
		Rendezvous:      rendezvousSource{c}, // rendezvous.go
		ArtifactMaxSize: c.cfg.ArtifactMaxSize,
		ArtifactTimeout: c.cfg.ArtifactTimeout,
	}
}
