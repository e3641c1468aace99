package agent

import (
	"net/http"
	"time"

	"github.com/droverhq/drover/structs"
)

// GPU utilisation history: each client keeps a bounded history per GPU
// (client/gpuhistory); these routes read it through the servers like the
// other client operations, so any agent answers for any node.
//
//	GET /v1/client/gpus/history?node_id=<id>&window=<duration>
//	GET /v1/client/allocation/<id>/gpus/history?window=<duration>
//
// window (optional) keeps only the last part of what the client holds.

func (h *httpAPI) gpuHistoryRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/client/gpus/history", h.wrap(h.nodeGPUHistory))
	m.HandleFunc("GET /v1/client/allocation/{id}/gpus/history", h.wrap(h.allocGPUHistory))
}

// historyWindow reads ?window= ("" is all the client keeps).
func historyWindow(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("window")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errorf(http.StatusBadRequest, "window %q must be a positive duration (like \"10m\")", v)
	}
	return d, nil
}

// nodeGPUHistory answers the history of every GPU of a node
// (?node_id=, else this agent's own).
func (h *httpAPI) nodeGPUHistory(w http.ResponseWriter, r *http.Request) (any, error) {
	window, err := historyWindow(r)
	if err != nil {
		return nil, err
	}
	nodeID, err := h.targetNode(r)
	if err != nil {
		return nil, err
	}
	var reply structs.GPUHistoryResponse
	if err := h.clientCall(r, structs.RPCClientNodeGPUHistory, &structs.GPUHistoryRequest{NodeID: nodeID, Window: window}, &reply); err != nil {
		return nil, err
	}
	return normalizeHistory(&reply), nil
}

// allocGPUHistory answers the history of the GPUs an allocation holds,
// with its idle verdict.
func (h *httpAPI) allocGPUHistory(w http.ResponseWriter, r *http.Request) (any, error) {
	window, err := historyWindow(r)
	if err != nil {
		return nil, err
	}
	alloc, err := h.lookupAlloc(r, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	var reply structs.GPUHistoryResponse
	if err := h.clientCall(r, structs.RPCClientAllocGPUHistory, &structs.GPUHistoryRequest{AllocID: alloc.ID, Window: window}, &reply); err != nil {
		return nil, err
	}
	return normalizeHistory(&reply), nil
}

// normalizeHistory answers empty lists as [] rather than null.
func normalizeHistory(h *structs.GPUHistoryResponse) *structs.GPUHistoryResponse {
	h.GPUs = orEmpty(h.GPUs)
	h.IdleGPUs = orEmpty(h.IdleGPUs)
	for _, g := range h.GPUs {
		g.Samples = orEmpty(g.Samples)
	}
	return h
}
