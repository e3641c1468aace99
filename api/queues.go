package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// Queues is the /v1/queues and /v1/queue/<name> endpoints (Drover's
// fair-share queues).
type Queues struct{ c *Client }

// Queues returns the queue endpoints.
func (c *Client) Queues() *Queues { return &Queues{c: c} }

// List returns the queues (those whose name starts with q.Prefix), the
// default one included, sorted by name, each with the GPUs it holds, its
// waiting jobs and its fair share of the cluster's GPUs.
func (qs *Queues) List(ctx context.Context, q *QueryOptions) ([]*structs.QueueStatus, *QueryMeta, error) {
	var out []*structs.QueueStatus
	meta, err := qs.c.query(ctx, "/v1/queues", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Info returns one queue with its usage and fair share; an unknown one is
// a 404 (IsNotFound).
func (qs *Queues) Info(ctx context.Context, name string, q *QueryOptions) (*structs.QueueStatus, *QueryMeta, error) {
	var out structs.QueueStatus
	meta, err := qs.c.query(ctx, "/v1/queue/"+pathID(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Register creates or replaces a queue. A Weight of 0 is sent as the
// default, 1. Changing a queue retries the evaluations waiting for GPUs.
func (qs *Queues) Register(ctx context.Context, queue *structs.Queue, w *WriteOptions) (*WriteMeta, error) {
	if queue == nil {
		return nil, errors.New("register queue: missing queue")
	}
	c := queue.Copy()
	c.Canonicalize()
	return qs.c.write(ctx, http.MethodPut, "/v1/queue/"+pathID(c.Name), c, nil, w, nil)
}

// Delete removes a queue. The default queue, and one that jobs still
// name, cannot be deleted (400).
func (qs *Queues) Delete(ctx context.Context, name string, w *WriteOptions) (*WriteMeta, error) {
	return qs.c.write(ctx, http.MethodDelete, "/v1/queue/"+pathID(name), nil, nil, w, nil)
}
