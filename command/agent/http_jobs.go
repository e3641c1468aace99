package agent

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/jobspec"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
	"github.com/hashicorp/go-memdb"
)

func (h *httpAPI) jobsList(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		jobs, err := s.JobsByIDPrefix(ws, o.Namespace, o.Prefix)
		if err != nil {
			return nil, 0, err
		}
		out := make([]*structs.JobListStub, 0, len(jobs))
		for _, j := range jobs {
			sum, err := s.JobSummary(ws, j.Namespace, j.ID)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, j.Stub(sum))
		}
		idx, err := tableIndex(s, "jobs", "allocs")
		return out, idx, err
	})
}

// jobRegisterBody is the body of PUT /v1/jobs (Nomad's JobRegisterRequest).
type jobRegisterBody struct {
	Job            *structs.Job
	EnforceIndex   bool
	JobModifyIndex uint64
}

func (h *httpAPI) jobsRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobRegisterBody
	if err := decodeBody(r, &body); err != nil {
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
	body.Job.Canonicalize()
	if err := body.Job.Validate(); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid job: %v", err)
	}
	if body.EnforceIndex {
		if err := h.enforceIndex(body.Job, body.JobModifyIndex); err != nil {
			return nil, err
		}
	}
	body.Job.SubmitTime = time.Now().UnixNano()
	req := &structs.JobRegisterRequest{Job: body.Job, WriteRequest: structs.WriteRequest{Region: body.Job.Region, Namespace: body.Job.Namespace}}
	var resp structs.JobRegisterResponse
	if err := h.b.RPC(structs.RPCJobRegister, req, &resp); err != nil {
		return nil, err
	}
	h.setMeta(w, resp.Index)
	return &resp, nil
}

// enforceIndex implements check-and-set registration: index 0 means the
// job must not exist yet.
func (h *httpAPI) enforceIndex(job *structs.Job, want uint64) error {
	st := h.b.State()
	if st == nil {
		return errorf(http.StatusNotImplemented, "this agent runs no server")
	}
	cur, err := st.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	switch {
	case cur == nil && want != 0:
		return errorf(http.StatusConflict, "enforcing job modify index %d: job does not exist", want)
	case cur != nil && cur.JobModifyIndex != want:
		return errorf(http.StatusConflict, "enforcing job modify index %d: job exists with conflicting job modify index: %d", want, cur.JobModifyIndex)
	}
	return nil
}

// jobsParseBody is the body of POST /v1/jobs/parse.
type jobsParseBody struct {
	JobHCL       string
	Canonicalize bool
}

func (h *httpAPI) jobsParse(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobsParseBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if strings.TrimSpace(body.JobHCL) == "" {
		return nil, errorf(http.StatusBadRequest, "JobHCL is empty")
	}
	job, err := jobspec.Parse("input.hcl", []byte(body.JobHCL))
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	return job, nil
}

func (h *httpAPI) jobRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		job, err := s.JobByID(ws, o.Namespace, id)
		if err != nil {
			return nil, 0, err
		}
		if job == nil {
			return nil, 0, errorf(http.StatusNotFound, "job %q not found", id)
		}
		return job, job.ModifyIndex, nil
	})
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
	if err := h.b.RPC(structs.RPCJobDeregister, req, &resp); err != nil {
		return nil, err
	}
	h.setMeta(w, resp.Index)
	return &resp, nil
}

func (h *httpAPI) jobAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		allocs, err := s.AllocsByJob(ws, o.Namespace, id)
		if err != nil {
			return nil, 0, err
		}
		out := make([]*structs.AllocListStub, 0, len(allocs))
		for _, a := range allocs {
			out = append(out, a.Stub())
		}
		idx, err := newestIndex(s, "allocs", allocs, func(a *structs.Allocation) uint64 { return a.ModifyIndex })
		return out, idx, err
	})
}

func (h *httpAPI) jobEvals(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		evals, err := s.EvalsByJob(ws, o.Namespace, id)
		if err != nil {
			return nil, 0, err
		}
		if evals == nil {
			evals = []*structs.Evaluation{}
		}
		idx, err := newestIndex(s, "evals", evals, func(e *structs.Evaluation) uint64 { return e.ModifyIndex })
		return evals, idx, err
	})
}

func (h *httpAPI) jobSummary(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		job, err := s.JobByID(ws, o.Namespace, id)
		if err != nil {
			return nil, 0, err
		}
		if job == nil {
			return nil, 0, errorf(http.StatusNotFound, "job %q not found", id)
		}
		sum, err := s.JobSummary(ws, o.Namespace, id)
		if err != nil {
			return nil, 0, err
		}
		idx, err := tableIndex(s, "jobs", "allocs", "evals")
		return sum, idx, err
	})
}

// jobPlanBody is the body of PUT /v1/job/<id>/plan.
type jobPlanBody struct {
	Job  *structs.Job
	Diff bool
}

func (h *httpAPI) jobPlan(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobPlanBody
	if err := decodeBody(r, &body); err != nil {
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
	if err := h.b.RPC(structs.RPCJobPlan, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}
