package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// Periodic force and parameterized dispatch (Nomad's routes and shapes).

// jobDispatchBody is the body of PUT /v1/job/<id>/dispatch (Nomad's
// JobDispatchRequest; Payload is base64).
type jobDispatchBody struct {
	JobID            string
	Payload          []byte
	Meta             map[string]string
	IdPrefixTemplate string //nolint:revive // Nomad's field name
	Priority         int
}

func (h *httpAPI) jobDispatch(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var body jobDispatchBody
	if err := h.decodeBody(r, &body); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := bodyIDMatches("job ID", body.JobID, id); err != nil {
		return nil, err
	}
	req := &structs.JobDispatchRequest{
		JobID: id, Payload: body.Payload, Meta: body.Meta, IdPrefixTemplate: body.IdPrefixTemplate, Priority: body.Priority,
		WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: o.Namespace},
	}
	var resp structs.JobDispatchResponse
	if err := h.write(w, r, structs.RPCJobDispatch, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}

func (h *httpAPI) periodicForce(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	req := &structs.PeriodicForceRequest{
		JobID:        r.PathValue("id"),
		WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: o.Namespace},
	}
	var resp structs.PeriodicForceResponse
	if err := h.write(w, r, structs.RPCPeriodicForce, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}
