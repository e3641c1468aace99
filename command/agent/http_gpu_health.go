package agent

import (
	"net/http"
)

// gpuHealthSetter is what PUT /v1/client/gpu/<uuid>/health needs from
// the backend: the local client's device health override (simulated
// GPUs only; NVIDIA GPUs follow their NVML events).
type gpuHealthSetter interface {
	SetDeviceHealth(id string, healthy bool, reason string) error
}

// GPUHealthRequest is the body of PUT /v1/client/gpu/<uuid>/health.
type GPUHealthRequest struct {
	Healthy bool
	Reason  string
}

// GPUHealthResponse answers it: the device and the health it now has.
type GPUHealthResponse struct {
	ID      string
	Healthy bool
	Reason  string
}

func (h *httpAPI) gpuHealthRoutes(m *http.ServeMux) {
	m.HandleFunc("PUT /v1/client/gpu/{id}/health", h.wrap(h.gpuHealth))
	m.HandleFunc("POST /v1/client/gpu/{id}/health", h.wrap(h.gpuHealth))
}

// gpuHealth marks a simulated GPU of this agent's client unhealthy (an
// injected fault) or healthy again; the client re-registers its node so
// the servers replace the allocations holding it.
func (h *httpAPI) gpuHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	setter, ok := h.b.(gpuHealthSetter)
	if !ok {
		return nil, errorf(http.StatusNotImplemented, "this agent cannot set GPU health")
	}
	var req GPUHealthRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := setter.SetDeviceHealth(id, req.Healthy, req.Reason); err != nil {
		return nil, err
	}
	return &GPUHealthResponse{ID: id, Healthy: req.Healthy, Reason: req.Reason}, nil
}

// SetDeviceHealth sets a simulated GPU's health on this agent's client.
func (a *Agent) SetDeviceHealth(id string, healthy bool, reason string) error {
	if a.client == nil {
		return errorf(http.StatusNotImplemented, "this agent runs no client; ask the agent on the GPU's node")
	}
	return a.client.SetDeviceHealth(id, healthy, reason)
}
