package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

func (h *httpAPI) gpus(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.GPUSummaryResponse
	if err := h.read(w, r, structs.RPCGPUSummary, &structs.GenericRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	sum := reply.Summary
	if sum == nil {
		sum = &structs.GPUSummary{}
	}
	sum.Models, sum.Nodes = orEmpty(sum.Models), orEmpty(sum.Nodes)
	return sum, nil
}

// jobScaleBody is Nomad's ScalingRequest.
type jobScaleBody struct {
	Count          *int
	Target         map[string]string
	Message        string
	EnforceIndex   bool
	JobModifyIndex uint64
}

// jobScale sets a group's count; the leader decides, check-and-set
// included (Job.Scale).
func (h *httpAPI) jobScale(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobScaleBody
	if err := h.decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Count == nil || *body.Count < 0 {
		return nil, errorf(http.StatusBadRequest, "scale: Count must be given and not negative")
	}
	group := body.Target["Group"]
	if group == "" {
		return nil, errorf(http.StatusBadRequest, "scale: Target.Group is required")
	}
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	req := &structs.JobScaleRequest{
		JobID: r.PathValue("id"), Group: group, Count: body.Count, Message: body.Message,
		EnforceIndex: body.EnforceIndex, JobModifyIndex: body.JobModifyIndex,
		WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: o.Namespace},
	}
	var resp structs.JobRegisterResponse
	if err := h.write(w, r, structs.RPCJobScale, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}
