package agent

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// varRoutes serves Nomad's variables API: /v1/vars (metadata, ?prefix)
// and /v1/var/<path> (the path may hold slashes) to read, write (?cas=N
// for check-and-set: 409 with the current variable when it loses) and
// delete (204).
func (h *httpAPI) varRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/vars", h.wrap(h.varsList))
	m.HandleFunc("GET /v1/var/{path...}", h.wrap(h.varRead))
	m.HandleFunc("PUT /v1/var/{path...}", h.varWrap(h.varUpsert))
	m.HandleFunc("POST /v1/var/{path...}", h.varWrap(h.varUpsert))
	m.HandleFunc("DELETE /v1/var/{path...}", h.varWrap(h.varDelete))
}

// varStatus is an answer with its own status: a 409 with the variable a
// check-and-set lost to, or a 204 without a body.
type varStatus struct {
	code int
	body any
}

// varWrap is wrap for handlers that answer a status of their own.
func (h *httpAPI) varWrap(fn func(w http.ResponseWriter, r *http.Request) (*varStatus, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		defer h.recoverPanic(w, r)
		st, err := fn(w, r)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		if st.body == nil {
			w.WriteHeader(st.code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st.code)
		if err := json.NewEncoder(w).Encode(st.body); err != nil {
			h.logger.Debug("http: write response", "path", r.URL.Path, "error", err)
		}
	}
}

// varsList answers []*structs.VariableMetadata.
func (h *httpAPI) varsList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.VariablesListResponse
	if err := h.read(w, r, structs.RPCVariablesList, &structs.VariablesListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Data), nil
}

// varRead answers the variable with its items, 404 when there is none.
func (h *httpAPI) varRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.VariablesReadResponse
	args := &structs.VariablesReadRequest{Path: r.PathValue("path"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCVariablesRead, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	if reply.Data == nil {
		return nil, errorf(http.StatusNotFound, "variable not found")
	}
	return reply.Data, nil
}

// checkIndex parses ?cas=N.
func checkIndex(r *http.Request) (*uint64, error) {
	v, ok := r.URL.Query()["cas"]
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseUint(v[0], 10, 64)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "cas %q: not an index", v[0])
	}
	return &n, nil
}

// varUpsert takes a Variable body (Nomad's shape); its path must be the
// URL's or empty, its namespace the query's when it names none.
func (h *httpAPI) varUpsert(w http.ResponseWriter, r *http.Request) (*varStatus, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	cas, err := checkIndex(r)
	if err != nil {
		return nil, err
	}
	for _, op := range []string{"lock-acquire", "lock-release", "lock-renew"} {
		if r.URL.Query().Has(op) {
			return nil, errorf(http.StatusBadRequest, "variable locks (%s) are not supported by Drover", op)
		}
	}
	var v structs.VariableDecrypted
	if err := h.decodeBody(r, &v); err != nil {
		return nil, err
	}
	path := r.PathValue("path")
	if v.Path != "" && v.Path != path {
		return nil, errorf(http.StatusBadRequest, "variable path %q in the body differs from %q in the URL", v.Path, path)
	}
	v.Path = path
	ns := o.Namespace
	if v.Namespace != "" {
		ns = v.Namespace
	}
	req := &structs.VariablesUpsertRequest{Var: &v, CheckIndex: cas, WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: ns}}
	var resp structs.VariablesUpsertResponse
	if err := h.write(w, r, structs.RPCVariablesUpsert, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	if resp.Conflict != nil {
		return &varStatus{code: http.StatusConflict, body: resp.Conflict}, nil
	}
	return &varStatus{code: http.StatusOK, body: resp.Output}, nil
}

// varDelete answers 204, or 409 with the current variable when a
// check-and-set loses.
func (h *httpAPI) varDelete(w http.ResponseWriter, r *http.Request) (*varStatus, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	cas, err := checkIndex(r)
	if err != nil {
		return nil, err
	}
	req := &structs.VariablesDeleteRequest{Path: r.PathValue("path"), CheckIndex: cas,
		WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: o.Namespace}}
	var resp structs.VariablesDeleteResponse
	if err := h.write(w, r, structs.RPCVariablesDelete, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	if resp.Conflict != nil {
		return &varStatus{code: http.StatusConflict, body: resp.Conflict}, nil
	}
	return &varStatus{code: http.StatusNoContent}, nil
}
