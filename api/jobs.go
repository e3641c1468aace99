package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/droverhq/drover/structs"
)

// Jobs is the /v1/jobs and /v1/job/<id> endpoints.
type Jobs struct{ c *Client }

// Jobs returns the jobs endpoints.
func (c *Client) Jobs() *Jobs { return &Jobs{c: c} }

// List returns the jobs of the namespace (all of them for "*").
func (j *Jobs) List(ctx context.Context, q *QueryOptions) ([]*structs.JobListStub, *QueryMeta, error) {
	var out []*structs.JobListStub
	meta, err := j.c.query(ctx, "/v1/jobs", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// PrefixList returns the jobs whose ID starts with prefix.
func (j *Jobs) PrefixList(ctx context.Context, prefix string) ([]*structs.JobListStub, *QueryMeta, error) {
	return j.List(ctx, &QueryOptions{Prefix: prefix})
}

// Info returns one job by its exact ID.
func (j *Jobs) Info(ctx context.Context, jobID string, q *QueryOptions) (*structs.Job, *QueryMeta, error) {
	var out structs.Job
	meta, err := j.c.query(ctx, "/v1/job/"+pathID(jobID), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// jobRegisterBody is the body of PUT /v1/jobs.
type jobRegisterBody struct {
	Job *structs.Job
}

// Register submits a job (new or updated) and returns the evaluation the
// servers created for it.
func (j *Jobs) Register(ctx context.Context, job *structs.Job, w *WriteOptions) (*structs.JobRegisterResponse, *WriteMeta, error) {
	var out structs.JobRegisterResponse
	meta, err := j.c.write(ctx, http.MethodPut, "/v1/jobs", &jobRegisterBody{Job: job}, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Deregister stops a job; with purge it is also removed from state.
func (j *Jobs) Deregister(ctx context.Context, jobID string, purge bool, w *WriteOptions) (*structs.JobDeregisterResponse, *WriteMeta, error) {
	var params url.Values
	if purge {
		params = url.Values{"purge": {"true"}}
	}
	var out structs.JobDeregisterResponse
	meta, err := j.c.write(ctx, http.MethodDelete, "/v1/job/"+pathID(jobID), nil, &out, w, params)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Allocations returns the job's allocations.
func (j *Jobs) Allocations(ctx context.Context, jobID string, q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	var out []*structs.AllocListStub
	meta, err := j.c.query(ctx, "/v1/job/"+pathID(jobID)+"/allocations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Evaluations returns the job's evaluations.
func (j *Jobs) Evaluations(ctx context.Context, jobID string, q *QueryOptions) ([]*structs.Evaluation, *QueryMeta, error) {
	var out []*structs.Evaluation
	meta, err := j.c.query(ctx, "/v1/job/"+pathID(jobID)+"/evaluations", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Summary returns the job's allocation counts per group.
func (j *Jobs) Summary(ctx context.Context, jobID string, q *QueryOptions) (*structs.JobSummary, *QueryMeta, error) {
	var out structs.JobSummary
	meta, err := j.c.query(ctx, "/v1/job/"+pathID(jobID)+"/summary", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// jobParseBody is the body of POST /v1/jobs/parse.
type jobParseBody struct {
	JobHCL       string
	Canonicalize bool
}

// ParseHCL has the agent parse a job file's text. A syntax error comes
// back as a 400 *StatusError whose message has file:line,col positions.
func (j *Jobs) ParseHCL(ctx context.Context, hcl string, canonicalize bool) (*structs.Job, error) {
	var out structs.Job
	if _, err := j.c.write(ctx, http.MethodPost, "/v1/jobs/parse", &jobParseBody{JobHCL: hcl, Canonicalize: canonicalize}, &out, nil, nil); err != nil {
		return nil, err
	}
	return &out, nil
}
