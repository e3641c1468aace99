package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// systemRoutes serves cluster maintenance, in Nomad's shape.
func (h *httpAPI) systemRoutes(m *routeMux) {
	m.HandleFunc("PUT /v1/system/gc", h.wrap(h.systemGC))
}

// systemGC collects every finished job, evaluation, allocation and down
// node now, whatever its age (System.GarbageCollect, management only),
// and answers an empty body as Nomad does.
func (h *httpAPI) systemGC(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var resp structs.GenericResponse
	if err := h.rpc(r, structs.RPCSystemGarbageCollect, &structs.SystemGCRequest{WriteRequest: structs.WriteRequest{Region: o.Region}}, &resp); err != nil {
		return nil, err
	}
	setIndex(w, resp.Index)
	return nil, nil
}
