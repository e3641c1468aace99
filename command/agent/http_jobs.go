package agent

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/jobspec"
	"github.com/droverhq/drover/structs"
)

func (h *httpAPI) jobsList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.JobListResponse
	if err := h.read(w, r, structs.RPCJobList, &structs.JobListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Jobs), nil
}

func (h *httpAPI) jobsRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobspec.JobRegisterBody
	if err := h.decodeJobBody(r, &body); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, errorf(http.StatusBadRequest, "request body has no Job")
	}
	if id := r.PathValue("id"); id != "" && id != body.Job.ID {
		return nil, errorf(http.StatusBadRequest, "job ID %q in the body does not match %q in the path", body.Job.ID, id)
	}
	if ns := r.URL.Query().Get("namespace"); ns != "" && body.Job.Namespace == "" {
		body.Job.Namespace = ns
	}
	// Shape and limits before Canonicalize, which would trip on a null
	// group or spend a count of 1e9; the server checks both again.
	if err := body.Job.CheckShape(); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid job: %v", err)
	}
	if err := body.Job.CheckLimits(h.limits); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid job: %v", err)
	}
	body.Job.Canonicalize()
	if err := body.Job.Validate(); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid job: %v", err)
	}
	body.Job.SubmitTime = time.Now().UnixNano()
	req := &structs.JobRegisterRequest{
		Job: body.Job, EnforceIndex: body.EnforceIndex, JobModifyIndex: body.JobModifyIndex,
		WriteRequest: structs.WriteRequest{Region: body.Job.Region, Namespace: body.Job.Namespace},
	}
	var resp structs.JobRegisterResponse
	if err := h.write(w, r, structs.RPCJobRegister, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}

// jobsParseBody is the body of POST /v1/jobs/parse.
type jobsParseBody struct {
	JobHCL string
	// Variables is var-file text (HCL "name = value"), as Nomad's
	// JobsParseRequest carries it. file() and the other file functions
	// are refused: the agent reads none of its own files for a job.
	Variables    string
	HCLv1        bool
	Canonicalize bool
}

func (h *httpAPI) jobsParse(w http.ResponseWriter, r *http.Request) (any, error) {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	if err := h.authorizeAgent(r, func(a *acl.ACL) bool { return a.AllowNamespaceOperation(ns, acl.CapParseJob) }); err != nil {
		return nil, err
	}
	var body jobsParseBody
	if err := h.decodeBody(r, &body); err != nil {
		return nil, err
	}
	if strings.TrimSpace(body.JobHCL) == "" {
		return nil, errorf(http.StatusBadRequest, "JobHCL is empty")
	}
	if body.HCLv1 {
		return nil, errorf(http.StatusBadRequest, "HCLv1 job files are not supported: Drover reads HCL2 only")
	}
	opts := jobspec.Options{Limits: h.limits}
	if strings.TrimSpace(body.Variables) != "" {
		opts.VarFiles = []jobspec.VarFile{{Name: "variables.hcl", Src: []byte(body.Variables)}}
	}
	job, err := jobspec.ParseWith("input.hcl", []byte(body.JobHCL), opts)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	return job, nil
}

func (h *httpAPI) jobRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if v := r.URL.Query().Get("version"); v != "" {
		return h.jobVersionRead(w, r, v) // http_job_versions.go
	}
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SingleJobResponse
	args := &structs.JobSpecificRequest{JobID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCJobGetJob, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Job, nil
}

func (h *httpAPI) jobDeregister(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	purge, _ := strconv.ParseBool(r.URL.Query().Get("purge"))
	req := &structs.JobDeregisterRequest{
		JobID: r.PathValue("id"), Purge: purge,
		WriteRequest: structs.WriteRequest{Region: o.Region, Namespace: o.Namespace},
	}
	var resp structs.JobDeregisterResponse
	if err := h.write(w, r, structs.RPCJobDeregister, req, &resp, &resp.Index); err != nil {
		return nil, err
	}
	return &resp, nil
}

func (h *httpAPI) jobAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.JobAllocationsResponse
	args := &structs.JobSpecificRequest{JobID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCJobAllocations, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Allocations), nil
}

func (h *httpAPI) jobEvals(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.JobEvaluationsResponse
	args := &structs.JobSpecificRequest{JobID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCJobEvaluations, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Evaluations), nil
}

func (h *httpAPI) jobSummary(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.JobSummaryResponse
	args := &structs.JobSpecificRequest{JobID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCJobSummary, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.JobSummary, nil
}

func (h *httpAPI) jobPlan(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobspec.JobPlanBody
	if err := h.decodeJobBody(r, &body); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, errorf(http.StatusBadRequest, "request body has no Job")
	}
	if id := r.PathValue("id"); id != body.Job.ID {
		return nil, errorf(http.StatusBadRequest, "job ID %q in the body does not match %q in the path", body.Job.ID, id)
	}
	if ns := r.URL.Query().Get("namespace"); ns != "" && body.Job.Namespace == "" {
		body.Job.Namespace = ns
	}
	req := &structs.JobPlanRequest{Job: body.Job, Diff: body.Diff, WriteRequest: structs.WriteRequest{Namespace: body.Job.Namespace}}
	var resp structs.JobPlanResponse
	if err := h.rpc(r, structs.RPCJobPlan, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// decodeJobBody decodes a body that carries a job (a
// jobspec.JobRegisterBody or JobPlanBody) the way job files are decoded:
// a field neither Drover's nor Nomad's, or a Nomad field Drover does not
// implement holding a value, is a 400 naming it.
func (h *httpAPI) decodeJobBody(r *http.Request, out any) error {
	src, err := h.readBody(r)
	if err != nil {
		return err
	}
	if err := jobspec.DecodeJSONBody(src, out); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	return nil
}
