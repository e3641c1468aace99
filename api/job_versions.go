package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// Versions returns the job's stored versions, newest first, and with
// diffs each one's diff against the version before it.
func (j *Jobs) Versions(ctx context.Context, jobID string, diffs bool, q *QueryOptions) ([]*structs.Job, []*structs.JobDiff, *QueryMeta, error) {
	qo := QueryOptions{}
	if q != nil {
		qo = *q
	}
	if diffs {
		qo.Params = withParam(qo.Params, "diffs", "true")
	}
	var out structs.JobVersionsResponse
	meta, err := j.c.query(ctx, "/v1/job/"+pathID(jobID)+"/versions", &qo, &out)
	if err != nil {
		return nil, nil, nil, err
	}
	return out.Versions, out.Diffs, meta, nil
}

// InfoVersion returns one stored version of the job.
func (j *Jobs) InfoVersion(ctx context.Context, jobID string, version uint64, q *QueryOptions) (*structs.Job, *QueryMeta, error) {
	qo := QueryOptions{}
	if q != nil {
		qo = *q
	}
	qo.Params = withParam(qo.Params, "version", strconv.FormatUint(version, 10))
	return j.Info(ctx, jobID, &qo)
}

// jobRevertBody is the body of PUT /v1/job/<id>/revert.
type jobRevertBody struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
}

// Revert registers a stored version of the job again, as a new version.
func (j *Jobs) Revert(ctx context.Context, jobID string, version uint64, enforcePrior *uint64, w *WriteOptions) (*structs.JobRegisterResponse, *WriteMeta, error) {
	var out structs.JobRegisterResponse
	body := &jobRevertBody{JobID: jobID, JobVersion: version, EnforcePriorVersion: enforcePrior}
	meta, err := j.c.write(ctx, http.MethodPut, "/v1/job/"+pathID(jobID)+"/revert", body, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// jobStableBody is the body of PUT /v1/job/<id>/stable.
type jobStableBody struct {
	JobID      string
	JobVersion uint64
	Stable     bool
}

// Stable marks one version of the job stable, or not.
func (j *Jobs) Stable(ctx context.Context, jobID string, version uint64, stable bool, w *WriteOptions) (*structs.JobStabilityResponse, *WriteMeta, error) {
	var out structs.JobStabilityResponse
	body := &jobStableBody{JobID: jobID, JobVersion: version, Stable: stable}
	meta, err := j.c.write(ctx, http.MethodPut, "/v1/job/"+pathID(jobID)+"/stable", body, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// withParam returns params (copied) with k set to v.
func withParam(params map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(params)+1)
	for pk, pv := range params {
		out[pk] = pv
	}
	out[k] = v
	return out
}
