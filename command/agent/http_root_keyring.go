package agent

import (
	"net/http"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// rootKeyringRoutes serves Nomad's variables keyring API (not the gossip
// keyring of /v1/agent/keyring): rotate and list the root keys.
func (h *httpAPI) rootKeyringRoutes(m *routeMux) {
	m.HandleFunc("PUT /v1/operator/keyring/rotate", h.wrap(h.rootKeyRotate))
	m.HandleFunc("POST /v1/operator/keyring/rotate", h.wrap(h.rootKeyRotate))
	m.HandleFunc("GET /v1/operator/keyring/keys", h.wrap(h.rootKeyList))
}

// rootKeyRotate answers {"Key": meta} as Nomad does.
func (h *httpAPI) rootKeyRotate(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	full := false
	if v := q.Get("full"); v != "" {
		if full, err = strconv.ParseBool(v); err != nil {
			return nil, errorf(http.StatusBadRequest, "full %q: not a boolean", v)
		}
	}
	if q.Get("publish_time") != "" {
		return nil, errorf(http.StatusBadRequest, "publish_time (prepublished keys) is not supported by Drover")
	}
	req := &structs.RootKeyRotateRequest{Full: full, Algorithm: q.Get("algo"), WriteRequest: structs.WriteRequest{Region: o.Region}}
	var resp structs.RootKeyRotateResponse
	if err := h.write(w, r, structs.RPCRootKeyRotate, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return struct{ Key *structs.RootKeyMeta }{resp.Key}, nil
}

// rootKeyList answers []*structs.RootKeyMeta, oldest first.
func (h *httpAPI) rootKeyList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.RootKeyListResponse
	if err := h.read(w, r, structs.RPCRootKeyList, &structs.RootKeyListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Keys), nil
}
