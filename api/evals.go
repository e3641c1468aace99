package api

import (
	"context"

	"github.com/droverhq/drover/structs"
)

// Evaluations is the /v1/evaluations and /v1/evaluation/<id> endpoints.
type Evaluations struct{ c *Client }

// Evaluations returns the evaluation endpoints.
func (c *Client) Evaluations() *Evaluations { return &Evaluations{c: c} }

// List returns the evaluations of the namespace.
func (e *Evaluations) List(ctx context.Context, q *QueryOptions) ([]*structs.Evaluation, *QueryMeta, error) {
	var out []*structs.Evaluation
	meta, err := e.c.query(ctx, "/v1/evaluations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Info returns one evaluation; evalID may be a unique prefix.
func (e *Evaluations) Info(ctx context.Context, evalID string, q *QueryOptions) (*structs.Evaluation, *QueryMeta, error) {
	var out structs.Evaluation
	meta, err := e.c.query(ctx, "/v1/evaluation/"+pathID(evalID), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Allocations returns the allocations the evaluation created or changed.
func (e *Evaluations) Allocations(ctx context.Context, evalID string, q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	var out []*structs.AllocListStub
	meta, err := e.c.query(ctx, "/v1/evaluation/"+pathID(evalID)+"/allocations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}
