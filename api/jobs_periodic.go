package api

import (
	"context"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// DispatchOptions is a dispatch of a parameterized job (Nomad's).
type DispatchOptions struct {
	JobID            string
	Payload          []byte
	Meta             map[string]string
	IdPrefixTemplate string //nolint:revive // Nomad's field name
	Priority         int
}

// Dispatch creates a child of the parameterized job opts.JobID with the
// payload and meta, and returns its ID and evaluation.
func (j *Jobs) Dispatch(ctx context.Context, opts *DispatchOptions, w *WriteOptions) (*structs.JobDispatchResponse, *WriteMeta, error) {
	body := map[string]any{
		"JobID": opts.JobID, "Payload": opts.Payload, "Meta": opts.Meta,
		"IdPrefixTemplate": opts.IdPrefixTemplate, "Priority": opts.Priority,
	}
	var out structs.JobDispatchResponse
	meta, err := j.c.write(ctx, http.MethodPut, "/v1/job/"+pathID(opts.JobID)+"/dispatch", body, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// PeriodicForce launches a periodic job's child now and returns its
// evaluation.
func (j *Jobs) PeriodicForce(ctx context.Context, jobID string, w *WriteOptions) (*structs.PeriodicForceResponse, *WriteMeta, error) {
	var out structs.PeriodicForceResponse
	meta, err := j.c.write(ctx, http.MethodPut, "/v1/job/"+pathID(jobID)+"/periodic/force", nil, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}
