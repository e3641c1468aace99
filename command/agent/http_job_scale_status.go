package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// routeJobScaleStatus adds Nomad's GET /v1/job/{id}/scale.
func (h *httpAPI) routeJobScaleStatus(m *routeMux) {
	m.HandleFunc("GET /v1/job/{id}/scale", h.wrap(h.jobScaleStatus))
}

func (h *httpAPI) jobScaleStatus(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.JobScaleStatusResponse
	args := &structs.JobSpecificRequest{JobID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCJobScaleStatus, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.JobScaleStatus, nil
}
