package api

import (
	"context"

	"github.com/droverhq/drover/structs"
)

// Scaling is the /v1/scaling/policies and /v1/scaling/policy/<id>
// endpoints: the groups' scaling blocks, as Nomad serves them.
type Scaling struct{ c *Client }

// Scaling returns the scaling policy endpoints.
func (c *Client) Scaling() *Scaling { return &Scaling{c: c} }

// ListPolicies returns the policy stubs of the namespace ("*": all);
// q.Params "job" and "type" filter.
func (s *Scaling) ListPolicies(ctx context.Context, q *QueryOptions) ([]*structs.ScalingPolicyListStub, *QueryMeta, error) {
	var out []*structs.ScalingPolicyListStub
	meta, err := s.c.query(ctx, "/v1/scaling/policies", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// GetPolicy returns one policy; an unknown ID is a 404 (IsNotFound).
func (s *Scaling) GetPolicy(ctx context.Context, id string, q *QueryOptions) (*structs.ScalingPolicy, *QueryMeta, error) {
	var out structs.ScalingPolicy
	meta, err := s.c.query(ctx, "/v1/scaling/policy/"+pathID(id), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}
