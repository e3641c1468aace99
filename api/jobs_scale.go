package api

import (
	"context"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// jobScaleBody is the body of PUT /v1/job/<id>/scale (Nomad's
// ScalingRequest).
type jobScaleBody struct {
	Count   *int
	Target  map[string]string
	Message string `json:",omitempty"`
}

// Scale sets the count of the job's group and returns the evaluation the
// servers created for it.
func (j *Jobs) Scale(ctx context.Context, jobID, group string, count int, message string, w *WriteOptions) (*structs.JobRegisterResponse, *WriteMeta, error) {
	var out structs.JobRegisterResponse
	body := &jobScaleBody{Count: &count, Target: map[string]string{"Group": group}, Message: message}
	meta, err := j.c.write(ctx, http.MethodPut, "/v1/job/"+pathID(jobID)+"/scale", body, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}
