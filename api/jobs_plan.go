package api

import (
	"context"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// jobPlanBody is the body of PUT /v1/job/<id>/plan.
type jobPlanBody struct {
	Job  *structs.Job
	Diff bool
}

// Plan asks the servers what registering job would do, without doing it:
// the placements with their GPUs, the stops, and why anything could not
// be placed.
func (j *Jobs) Plan(ctx context.Context, job *structs.Job, diff bool, w *WriteOptions) (*structs.JobPlanResponse, error) {
	var out structs.JobPlanResponse
	if _, err := j.c.write(ctx, http.MethodPut, "/v1/job/"+pathID(job.ID)+"/plan", &jobPlanBody{Job: job, Diff: diff}, &out, w, nil); err != nil {
		return nil, err
	}
	return &out, nil
}
