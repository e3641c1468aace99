package api

import (
	"context"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// Nodes is the /v1/nodes and /v1/node/<id> endpoints.
type Nodes struct{ c *Client }

// Nodes returns the node endpoints.
func (c *Client) Nodes() *Nodes { return &Nodes{c: c} }

// List returns every node.
func (n *Nodes) List(ctx context.Context, q *QueryOptions) ([]*structs.NodeListStub, *QueryMeta, error) {
	var out []*structs.NodeListStub
	meta, err := n.c.query(ctx, "/v1/nodes", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Info returns one node with its resources and GPUs; nodeID may be a
// unique prefix.
func (n *Nodes) Info(ctx context.Context, nodeID string, q *QueryOptions) (*structs.Node, *QueryMeta, error) {
	var out structs.Node
	meta, err := n.c.query(ctx, "/v1/node/"+pathID(nodeID), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Allocations returns every allocation on the node, terminal ones included.
func (n *Nodes) Allocations(ctx context.Context, nodeID string, q *QueryOptions) ([]*structs.Allocation, *QueryMeta, error) {
	var out []*structs.Allocation
	meta, err := n.c.query(ctx, "/v1/node/"+pathID(nodeID)+"/allocations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// nodeEligibilityBody is Nomad's NodeUpdateEligibilityRequest.
type nodeEligibilityBody struct {
	NodeID      string
	Eligibility string
}

// UpdateEligibility sets the node's scheduling eligibility ("eligible"
// or "ineligible"); nodeID must be the full ID.
func (n *Nodes) UpdateEligibility(ctx context.Context, nodeID, eligibility string, w *WriteOptions) (*structs.NodeEligibilityUpdateResponse, *WriteMeta, error) {
	var out structs.NodeEligibilityUpdateResponse
	body := &nodeEligibilityBody{NodeID: nodeID, Eligibility: eligibility}
	meta, err := n.c.write(ctx, http.MethodPut, "/v1/node/"+pathID(nodeID)+"/eligibility", body, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}
