package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// scalingRoutes serves Nomad's scaling policy reads (Scaling endpoint).
func (h *httpAPI) scalingRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/scaling/policies", h.wrap(h.scalingPolicies))
	m.HandleFunc("GET /v1/scaling/policy/{id}", h.wrap(h.scalingPolicy))
}

// scalingPolicies lists policy stubs; job= and type= filter.
func (h *httpAPI) scalingPolicies(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	args := &structs.ScalingPolicyListRequest{JobID: r.URL.Query().Get("job"), Type: r.URL.Query().Get("type"), QueryOptions: o}
	var reply structs.ScalingPolicyListResponse
	if err := h.read(w, r, structs.RPCScalingListPolicies, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Policies), nil
}

func (h *httpAPI) scalingPolicy(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	args := &structs.ScalingPolicySpecificRequest{ID: r.PathValue("id"), QueryOptions: o}
	var reply structs.SingleScalingPolicyResponse
	if err := h.read(w, r, structs.RPCScalingGetPolicy, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Policy, nil
}
