package api

import (
	"context"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// Namespaces is the /v1/namespaces and /v1/namespace/<name> endpoints.
type Namespaces struct{ c *Client }

// Namespaces returns the namespace endpoints.
func (c *Client) Namespaces() *Namespaces { return &Namespaces{c: c} }

// List returns the namespaces (those whose name starts with q.Prefix),
// the default one included, sorted by name.
func (n *Namespaces) List(ctx context.Context, q *QueryOptions) ([]*structs.Namespace, *QueryMeta, error) {
	var out []*structs.Namespace
	meta, err := n.c.query(ctx, "/v1/namespaces", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Info returns one namespace; an unknown one is a 404 (IsNotFound).
func (n *Namespaces) Info(ctx context.Context, name string, q *QueryOptions) (*structs.Namespace, *QueryMeta, error) {
	var out structs.Namespace
	meta, err := n.c.query(ctx, "/v1/namespace/"+pathID(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Register creates or replaces a namespace.
func (n *Namespaces) Register(ctx context.Context, ns *structs.Namespace, w *WriteOptions) (*WriteMeta, error) {
	return n.c.write(ctx, http.MethodPut, "/v1/namespace/"+pathID(ns.Name), ns, nil, w, nil)
}

// Delete removes a namespace. The default namespace, and one that still
// has jobs, cannot be deleted (400).
func (n *Namespaces) Delete(ctx context.Context, name string, w *WriteOptions) (*WriteMeta, error) {
	return n.c.write(ctx, http.MethodDelete, "/v1/namespace/"+pathID(name), nil, nil, w, nil)
}
