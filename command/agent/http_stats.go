package agent

import (
	"context"
	"errors"
	"net/http"

	"github.com/droverhq/drover/client"
	"github.com/droverhq/drover/structs"
)

// statsReader is what the client stats routes need from the backend: the
// local client's node and allocation usage.
type statsReader interface {
	NodeStats(ctx context.Context) (*structs.NodeStats, error)
	AllocStats(allocID string) (*structs.AllocStats, error)
}

func (h *httpAPI) statsRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /v1/client/stats", h.wrap(h.clientStats))
	m.HandleFunc("GET /v1/client/allocation/{id}/stats", h.wrap(h.allocStats))
}

// clientStats answers the usage of this agent's node: host and GPUs.
func (h *httpAPI) clientStats(w http.ResponseWriter, r *http.Request) (any, error) {
	sr, ok := h.b.(statsReader)
	if !ok {
		return nil, errorf(http.StatusNotImplemented, "this agent runs no client")
	}
	return sr.NodeStats(r.Context())
}

// allocStats answers the usage of the GPUs an allocation on this agent's
// node holds.
func (h *httpAPI) allocStats(w http.ResponseWriter, r *http.Request) (any, error) {
	sr, ok := h.b.(statsReader)
	if !ok {
		return nil, errorf(http.StatusNotImplemented, "this agent runs no client")
	}
	id, err := h.fullAllocID(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	st, err := sr.AllocStats(id)
	if errors.Is(err, client.ErrUnknownAlloc) {
		return nil, errorf(http.StatusNotFound, "%v", err)
	}
	return st, err
}

// NodeStats returns the usage of this agent's node.
func (a *Agent) NodeStats(ctx context.Context) (*structs.NodeStats, error) {
	if a.client == nil {
		return nil, errorf(http.StatusNotImplemented, "this agent runs no client; ask the agent on the node")
	}
	return a.client.NodeStats(ctx), nil
}

// AllocStats returns the usage of an allocation on this agent's client.
func (a *Agent) AllocStats(allocID string) (*structs.AllocStats, error) {
	if a.client == nil {
		return nil, errorf(http.StatusNotImplemented, "this agent runs no client; ask the agent on the allocation's node")
	}
	return a.client.AllocStats(allocID)
}
