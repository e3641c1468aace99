package agent

import (
	"net/http"

	"github.com/droverhq/drover/jobspec"
	"github.com/droverhq/drover/structs"
)

// routeJobValidate adds Nomad's PUT/POST /v1/validate/job.
func (h *httpAPI) routeJobValidate(m *routeMux) {
	m.HandleFunc("PUT /v1/validate/job", h.wrap(h.jobValidate))
	m.HandleFunc("POST /v1/validate/job", h.wrap(h.jobValidate))
}

// jobValidate checks a job as registering it would, storing nothing: an
// invalid job is a 200 whose body says why (Nomad's
// JobValidateResponse); a body that is not a job is a 400.
func (h *httpAPI) jobValidate(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobspec.JobRegisterBody // Nomad's JobValidateRequest is its Job and WriteRequest
	if err := h.decodeJobBody(r, &body); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, errorf(http.StatusBadRequest, "request body has no Job")
	}
	if ns := r.URL.Query().Get("namespace"); ns != "" && body.Job.Namespace == "" {
		body.Job.Namespace = ns
	}
	req := &structs.JobValidateRequest{
		Job:          body.Job,
		WriteRequest: structs.WriteRequest{Region: body.Job.Region, Namespace: body.Job.Namespace},
	}
	var resp structs.JobValidateResponse
	if err := h.rpc(r, structs.RPCJobValidate, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}
