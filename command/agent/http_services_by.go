package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// routeServicesBy adds Nomad's GET /v1/job/{id}/services and
// /v1/allocation/{id}/services.
func (h *httpAPI) routeServicesBy(m *routeMux) {
	m.HandleFunc("GET /v1/job/{id}/services", h.wrap(h.servicesBy(structs.RPCServiceRegistrationsByJob)))
	m.HandleFunc("GET /v1/allocation/{id}/services", h.wrap(h.servicesBy(structs.RPCServiceRegistrationsByAlloc)))
}

// servicesBy answers the []*structs.ServiceRegistration of the job or
// allocation the path names.
func (h *httpAPI) servicesBy(method string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		o, err := parseQuery(r)
		if err != nil {
			return nil, err
		}
		var args any = &structs.JobSpecificRequest{JobID: r.PathValue("id"), QueryOptions: o}
		if method == structs.RPCServiceRegistrationsByAlloc {
			args = &structs.AllocSpecificRequest{AllocID: r.PathValue("id"), QueryOptions: o}
		}
		var reply structs.ServiceRegistrationByNameResponse
		if err := h.read(w, r, method, args, &reply, &reply.QueryMeta); err != nil {
			return nil, err
		}
		return orEmpty(reply.Services), nil
	}
}
