package api

import (
	"context"
	"net/http"
)

// System is the /v1/system endpoints: cluster maintenance.
type System struct{ c *Client }

// System returns the system endpoints.
func (c *Client) System() *System { return &System{c: c} }

// GarbageCollect collects every finished job, evaluation, allocation and
// down node now, whatever its age. It needs a management token.
func (s *System) GarbageCollect(ctx context.Context, w *WriteOptions) (*WriteMeta, error) {
	return s.c.write(ctx, http.MethodPut, "/v1/system/gc", nil, nil, w, nil)
}
