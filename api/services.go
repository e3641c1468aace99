package api

import (
	"context"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// Services is the /v1/services and /v1/service/<name> endpoints: the
// built-in service registry (provider = "nomad").
type Services struct{ c *Client }

// Services returns the service registry endpoints.
func (c *Client) Services() *Services { return &Services{c: c} }

// List returns the service names and tags of the query's namespace ("*":
// every namespace the token may read), grouped by namespace.
func (s *Services) List(ctx context.Context, q *QueryOptions) ([]*structs.ServiceRegistrationListStub, *QueryMeta, error) {
	var out []*structs.ServiceRegistrationListStub
	meta, err := s.c.query(ctx, "/v1/services", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Get returns the registrations of one service (none: an empty list).
func (s *Services) Get(ctx context.Context, name string, q *QueryOptions) ([]*structs.ServiceRegistration, *QueryMeta, error) {
	var out []*structs.ServiceRegistration
	meta, err := s.c.query(ctx, "/v1/service/"+pathID(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Delete removes one registration; a running allocation's client
// registers it again when the client restarts.
func (s *Services) Delete(ctx context.Context, name, id string, w *WriteOptions) (*WriteMeta, error) {
	return s.c.write(ctx, http.MethodDelete, "/v1/service/"+pathID(name)+"/"+pathID(id), nil, nil, w, nil)
}
