package api

import (
	"context"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// Quotas is the /v1/quotas, /v1/quota/<name> and /v1/quota/usage/<name>
// endpoints.
type Quotas struct{ c *Client }

// Quotas returns the quota endpoints.
func (c *Client) Quotas() *Quotas { return &Quotas{c: c} }

// List returns the quota specifications (those whose name starts with
// q.Prefix), sorted by name.
func (qs *Quotas) List(ctx context.Context, q *QueryOptions) ([]*structs.QuotaSpec, *QueryMeta, error) {
	var out []*structs.QuotaSpec
	meta, err := qs.c.query(ctx, "/v1/quotas", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Info returns one quota specification; an unknown one is a 404
// (IsNotFound).
func (qs *Quotas) Info(ctx context.Context, name string, q *QueryOptions) (*structs.QuotaSpec, *QueryMeta, error) {
	var out structs.QuotaSpec
	meta, err := qs.c.query(ctx, "/v1/quota/"+pathID(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Usage returns what the quota's namespaces hold in the agent's region
// and the quota's limit there.
func (qs *Quotas) Usage(ctx context.Context, name string, q *QueryOptions) (*structs.QuotaUsageResponse, *QueryMeta, error) {
	var out structs.QuotaUsageResponse
	meta, err := qs.c.query(ctx, "/v1/quota/usage/"+pathID(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Register creates or replaces a quota specification. Raising a quota
// retries the evaluations it held back.
func (qs *Quotas) Register(ctx context.Context, spec *structs.QuotaSpec, w *WriteOptions) (*WriteMeta, error) {
	return qs.c.write(ctx, http.MethodPut, "/v1/quota/"+pathID(spec.Name), spec, nil, w, nil)
}

// Delete removes a quota specification; one a namespace names cannot be
// deleted (400).
func (qs *Quotas) Delete(ctx context.Context, name string, w *WriteOptions) (*WriteMeta, error) {
	return qs.c.write(ctx, http.MethodDelete, "/v1/quota/"+pathID(name), nil, nil, w, nil)
}
