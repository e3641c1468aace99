package agent

import (
	"net/http"

	"github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// namespaceRoutes serves namespaces and quotas in Nomad's shapes:
// /v1/namespaces, /v1/namespace/<name>, /v1/quotas, /v1/quota/<name> and
// /v1/quota/usage/<name>.
func (h *httpAPI) namespaceRoutes(m *http.ServeMux) {
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
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		nss, err := s.Namespaces(ws, o.Prefix)
		if err != nil {
			return nil, 0, err
		}
		idx, err := tableIndex(s, state.TableNamespaces)
		return nss, idx, err
	})
}

func (h *httpAPI) namespaceRead(w http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, _ structs.QueryOptions) (any, uint64, error) {
		ns, err := s.NamespaceByName(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if ns == nil {
			return nil, 0, errorf(http.StatusNotFound, "namespace %q not found", name)
		}
		idx, err := tableIndex(s, state.TableNamespaces)
		return ns, idx, err
	})
}

// namespaceUpsert takes a Namespace as the body; a name in the path must
// match the body's (or fills it when the body has none).
func (h *httpAPI) namespaceUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var ns structs.Namespace
	if err := decodeBody(r, &ns); err != nil {
		return nil, err
	}
	if err := nameFromPath(r, &ns.Name, "namespace"); err != nil {
		return nil, err
	}
	if err := ns.Validate(); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid namespace: %v", err)
	}
	req := &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{&ns}, WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, structs.RPCNamespaceUpsert, req)
}

func (h *httpAPI) namespaceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	req := &structs.NamespaceDeleteRequest{Namespaces: []string{r.PathValue("name")}, WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, structs.RPCNamespaceDelete, req)
}

func (h *httpAPI) quotasList(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		qs, err := s.QuotaSpecs(ws, o.Prefix)
		if err != nil {
			return nil, 0, err
		}
		if qs == nil {
			qs = []*structs.QuotaSpec{}
		}
		idx, err := tableIndex(s, state.TableQuotas)
		return qs, idx, err
	})
}

func (h *httpAPI) quotaRead(w http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, _ structs.QueryOptions) (any, uint64, error) {
		q, err := s.QuotaSpecByName(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if q == nil {
			return nil, 0, errorf(http.StatusNotFound, "quota %q not found", name)
		}
		idx, err := tableIndex(s, state.TableQuotas)
		return q, idx, err
	})
}

// quotaUpsert takes a QuotaSpec as the body (Nomad's shape).
func (h *httpAPI) quotaUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var q structs.QuotaSpec
	if err := decodeBody(r, &q); err != nil {
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
	return h.writeRPC(w, structs.RPCQuotaUpsert, req)
}

func (h *httpAPI) quotaDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	req := &structs.QuotaSpecDeleteRequest{Names: []string{r.PathValue("name")}, WriteRequest: h.namespaceWriteRequest(r)}
	return h.writeRPC(w, structs.RPCQuotaDelete, req)
}

// quotaUsage answers structs.QuotaUsageResponse: what the quota's
// namespaces hold in this agent's region, and the quota's limit there.
func (h *httpAPI) quotaUsage(w http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	region := h.agentRegion()
	var index uint64
	out, err := h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, _ structs.QueryOptions) (any, uint64, error) {
		u, err := s.QuotaUsage(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if u == nil {
			return nil, 0, errorf(http.StatusNotFound, "quota %q not found", name)
		}
		q, err := s.QuotaSpecByName(ws, name)
		if err != nil {
			return nil, 0, err
		}
		resp := &structs.QuotaUsageResponse{Usage: u, Region: region, Limit: q.LimitFor(region)}
		index, err = tableIndex(s, state.TableQuotas, state.TableNamespaces, state.TableAllocs)
		return resp, index, err
	})
	if err != nil {
		return nil, err
	}
	resp := out.(*structs.QuotaUsageResponse)
	resp.Index = max(index, 1)
	resp.KnownLeader = h.b.Leader() != ""
	resp.LastContact = h.b.LastContact()
	return resp, nil
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
func (h *httpAPI) writeRPC(w http.ResponseWriter, method string, req any) (any, error) {
	var resp structs.GenericResponse
	if err := h.b.RPC(method, req, &resp); err != nil {
		return nil, err
	}
	h.setMeta(w, resp.Index)
	return &resp, nil
}

// agentRegion is this agent's region, from its self description.
func (h *httpAPI) agentRegion() string {
	if cfg, ok := h.b.Self()["config"].(map[string]any); ok {
		if r, ok := cfg["Region"].(string); ok && r != "" {
			return r
		}
	}
	return "global"
}
