package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// serviceRoutes serves the built-in service registry as Nomad's:
// /v1/services (per namespace, ?namespace=* for all), /v1/service/<name>
// and DELETE /v1/service/<name>/<id>.
func (h *httpAPI) serviceRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/services", h.wrap(h.servicesList))
	m.HandleFunc("GET /v1/service/{name}", h.wrap(h.serviceRead))
	m.HandleFunc("DELETE /v1/service/{name}/{id}", h.wrap(h.serviceDelete))
}

// servicesList answers []*structs.ServiceRegistrationListStub.
func (h *httpAPI) servicesList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.ServiceRegistrationListResponse
	req := &structs.ServiceRegistrationListRequest{QueryOptions: o}
	if err := h.read(w, r, structs.RPCServiceRegistrationList, req, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Services), nil
}

// serviceRead answers the []*structs.ServiceRegistration of one service
// (an empty list when none is registered, as Nomad's); ?tag= keeps those
// with the tag.
func (h *httpAPI) serviceRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.ServiceRegistrationByNameResponse
	req := &structs.ServiceRegistrationByNameRequest{ServiceName: r.PathValue("name"), Tag: r.URL.Query().Get("tag"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCServiceRegistrationGetService, req, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Services), nil
}

func (h *httpAPI) serviceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	req := &structs.ServiceRegistrationDeleteByIDRequest{ID: r.PathValue("id"), WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, r, structs.RPCServiceRegistrationDeleteByID, req)
}

// allocChecks answers the latest result of each check of an allocation's
// services, keyed by check ID, from the client that runs it.
func (h *httpAPI) allocChecks(w http.ResponseWriter, r *http.Request) (any, error) {
	alloc, err := h.lookupAlloc(r, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	reply := map[string]*AllocCheckResult{}
	if err := h.clientCall(r, structs.RPCClientAllocChecks, &structs.ClientAllocRequest{AllocID: alloc.ID}, &reply); err != nil {
		return nil, err
	}
	return reply, nil
}

// AllocCheckResult is one check's latest result (Nomad's
// CheckQueryResult shape).
type AllocCheckResult struct {
	ID        string
	Check     string
	Group     string
	Service   string
	Task      string `json:",omitempty"`
	Mode      string
	Status    string
	Output    string
	Timestamp int64
}
