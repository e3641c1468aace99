package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// namespaceRoutes serves namespaces and quotas in Nomad's shapes:
// /v1/namespaces, /v1/namespace/<name>, /v1/quotas, /v1/quota/<name> and
// /v1/quota/usage/<name>.
func (h *httpAPI) namespaceRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/namespaces", h.wrap(h.namespacesList))
	m.HandleFunc("GET /v1/namespace/{name}", h.wrap(h.namespaceRead))
	m.HandleFunc("PUT /v1/namespace/{name}", h.wrap(h.namespaceUpsert))
	m.HandleFunc("POST /v1/namespace/{name}", h.wrap(h.namespaceUpsert))
	m.HandleFunc("PUT /v1/namespace", h.wrap(h.namespaceUpsert))
	m.HandleFunc("POST /v1/namespace", h.wrap(h.namespaceUpsert))
	m.HandleFunc("DELETE /v1/namespace/{name}", h.wrap(h.namespaceDelete))

	m.HandleFunc("GET /v1/quotas", h.wrap(h.quotasList))
	m.HandleFunc("GET /v1/quota/{name}", h.wrap(h.quotaRead))
	m.HandleFunc("PUT /v1/quota/{name}", h.wrap(h.quotaUpsert))
	m.HandleFunc("POST /v1/quota/{name}", h.wrap(h.quotaUpsert))
	m.HandleFunc("PUT /v1/quota", h.wrap(h.quotaUpsert))
	m.HandleFunc("POST /v1/quota", h.wrap(h.quotaUpsert))
	m.HandleFunc("DELETE /v1/quota/{name}", h.wrap(h.quotaDelete))
	m.HandleFunc("GET /v1/quota/usage/{name}", h.wrap(h.quotaUsage))
}

func (h *httpAPI) namespacesList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.NamespaceListResponse
	if err := h.read(w, r, structs.RPCNamespaceList, &structs.NamespaceListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Namespaces), nil
}

func (h *httpAPI) namespaceRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	var reply structs.SingleNamespaceResponse
	if err := h.read(w, r, structs.RPCNamespaceGet, &structs.NamespaceSpecificRequest{Name: name, QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	if reply.Namespace == nil {
		return nil, errorf(http.StatusNotFound, "namespace %q not found", name)
	}
	return reply.Namespace, nil
}

// namespaceUpsert takes a Namespace as the body; a name in the path must
// match the body's (or fills it when the body has none).
func (h *httpAPI) namespaceUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var ns structs.Namespace
	if err := h.decodeBody(r, &ns); err != nil {
		return nil, err
	}
	if err := nameFromPath(r, &ns.Name, "namespace"); err != nil {
		return nil, err
	}
	if err := ns.Validate(); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid namespace: %v", err)
	}
	req := &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{&ns}, WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, r, structs.RPCNamespaceUpsert, req)
}

func (h *httpAPI) namespaceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	req := &structs.NamespaceDeleteRequest{Namespaces: []string{r.PathValue("name")}, WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, r, structs.RPCNamespaceDelete, req)
}

func (h *httpAPI) quotasList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.QuotaListResponse
	if err := h.read(w, r, structs.RPCQuotaList, &structs.QuotaListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Quotas), nil
}

func (h *httpAPI) quotaRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	var reply structs.SingleQuotaSpecResponse
	if err := h.read(w, r, structs.RPCQuotaGet, &structs.QuotaSpecificRequest{Name: name, QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	if reply.Quota == nil {
		return nil, errorf(http.StatusNotFound, "quota %q not found", name)
	}
	return reply.Quota, nil
}

// quotaUpsert takes a QuotaSpec as the body (Nomad's shape).
func (h *httpAPI) quotaUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var q structs.QuotaSpec
	if err := h.decodeBody(r, &q); err != nil {
		return nil, err
	}
	if err := nameFromPath(r, &q.Name, "quota"); err != nil {
		return nil, err
	}
	if err := q.CheckShape(); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid quota: %v", err)
	}
	if err := q.Validate(); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid quota: %v", err)
	}
	req := &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{&q}, WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, r, structs.RPCQuotaUpsert, req)
}

func (h *httpAPI) quotaDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	req := &structs.QuotaSpecDeleteRequest{Names: []string{r.PathValue("name")}, WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, r, structs.RPCQuotaDelete, req)
}

// quotaUsage answers structs.QuotaUsageResponse: what the quota's
// namespaces hold in this agent's region, and the quota's limit there.
func (h *httpAPI) quotaUsage(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	var reply structs.QuotaUsageResponse
	if err := h.read(w, r, structs.RPCQuotaUsage, &structs.QuotaSpecificRequest{Name: name, QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	if reply.Usage == nil {
		return nil, errorf(http.StatusNotFound, "quota %q not found", name)
	}
	return &reply, nil
}

// nameFromPath fills *name from the path's {name} when the body gave
// none; a body name that differs from the path's is a 400.
func nameFromPath(r *http.Request, name *string, kind string) error {
	path := r.PathValue("name")
	switch {
	case path == "":
	case *name == "":
		*name = path
	case *name != path:
		return errorf(http.StatusBadRequest, "%s name %q in the body does not match %q in the path", kind, *name, path)
	}
	if *name == "" {
		return errorf(http.StatusBadRequest, "missing %s name", kind)
	}
	return nil
}

// namespaceWriteRequest is the request's region as a write's options.
func (h *httpAPI) namespaceWriteRequest(r *http.Request) structs.WriteRequest {
	return structs.WriteRequest{Region: r.URL.Query().Get("region")}
}

// writeRPC sends a write RPC and answers {"Index": N} with X-Nomad-Index.
func (h *httpAPI) writeRPC(w http.ResponseWriter, r *http.Request, method string, req any) (any, error) {
	var resp structs.GenericResponse
	if err := h.write(w, r, method, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}
