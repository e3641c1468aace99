package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// nodeEligibilityBody is Nomad's NodeUpdateEligibilityRequest.
type nodeEligibilityBody struct {
	NodeID      string
	Eligibility string
}

// routeNodeEligibility adds PUT/POST /v1/node/{id}/eligibility.
func (h *httpAPI) routeNodeEligibility(m *routeMux) {
	m.HandleFunc("PUT /v1/node/{id}/eligibility", h.wrap(h.nodeEligibility))
	m.HandleFunc("POST /v1/node/{id}/eligibility", h.wrap(h.nodeEligibility))
}

func (h *httpAPI) nodeEligibility(w http.ResponseWriter, r *http.Request) (any, error) {
	var body nodeEligibilityBody
	if err := h.decodeBody(r, &body); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := bodyIDMatches("node ID", body.NodeID, id); err != nil {
		return nil, err
	}
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	req := &structs.NodeUpdateEligibilityRequest{
		NodeID: id, Eligibility: body.Eligibility,
		WriteRequest: structs.WriteRequest{Region: o.Region},
	}
	var resp structs.NodeEligibilityUpdateResponse
	if err := h.write(w, r, structs.RPCNodeUpdateEligibility, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}
