package api

import (
	"context"

	"github.com/droverhq/drover/structs"
)

// Allocations is the /v1/allocations and /v1/allocation/<id> endpoints.
type Allocations struct{ c *Client }

// Allocations returns the allocation endpoints.
func (c *Client) Allocations() *Allocations { return &Allocations{c: c} }

// List returns the allocations of the namespace.
func (a *Allocations) List(ctx context.Context, q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	var out []*structs.AllocListStub
	meta, err := a.c.query(ctx, "/v1/allocations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Info returns one allocation, its job included; allocID may be a unique
// prefix.
func (a *Allocations) Info(ctx context.Context, allocID string, q *QueryOptions) (*structs.Allocation, *QueryMeta, error) {
	var out structs.Allocation
	meta, err := a.c.query(ctx, "/v1/allocation/"+pathID(allocID), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}
