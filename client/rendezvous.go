package client

import (
	"context"
	"time"

	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/structs"
)

// rendezvousSource reads the peers of a gang or distributed allocation
// this client runs (Node.GetRendezvous: the servers check the node's
// secret and that the allocation is on it).
type rendezvousSource struct{ c *Client }

var _ allocrunner.RendezvousSource = rendezvousSource{}

// Peers implements allocrunner.RendezvousSource.
func (r rendezvousSource) Peers(ctx context.Context, allocID string, minIndex uint64, wait time.Duration) (*structs.RendezvousResponse, error) {
	req := &structs.RendezvousRequest{
		NodeID: r.c.NodeID(), NodeSecret: r.c.Node().SecretID, AllocID: allocID,
		QueryOptions: structs.QueryOptions{Region: r.c.cfg.Region, MinQueryIndex: minIndex, MaxQueryTime: wait, AllowStale: true},
	}
	var resp structs.RendezvousResponse
	if err := r.c.rpc.callBlocking(ctx, wait, structs.RPCNodeGetRendezvous, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}
