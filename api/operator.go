package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// Operator is the /v1/operator endpoints: cluster-wide settings.
type Operator struct{ c *Client }

// Operator returns the operator endpoints.
func (c *Client) Operator() *Operator { return &Operator{c: c} }

const schedulerConfigPath = "/v1/operator/scheduler/configuration"

// SchedulerGetConfiguration returns the scheduler configuration (the
// default one when the operator has set none).
func (o *Operator) SchedulerGetConfiguration(ctx context.Context, q *QueryOptions) (*structs.SchedulerConfigurationResponse, *QueryMeta, error) {
	var out structs.SchedulerConfigurationResponse
	meta, err := o.c.query(ctx, schedulerConfigPath, q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// SchedulerSetConfiguration replaces the scheduler configuration.
func (o *Operator) SchedulerSetConfiguration(ctx context.Context, cfg *structs.SchedulerConfiguration, w *WriteOptions) (*structs.SchedulerSetConfigurationResponse, *WriteMeta, error) {
	return o.setSchedulerConfig(ctx, cfg, w, nil)
}

// SchedulerCASConfiguration replaces the scheduler configuration only if
// it is still at cfg.ModifyIndex (0: none set yet); the answer's Updated
// says whether it was.
func (o *Operator) SchedulerCASConfiguration(ctx context.Context, cfg *structs.SchedulerConfiguration, w *WriteOptions) (*structs.SchedulerSetConfigurationResponse, *WriteMeta, error) {
	return o.setSchedulerConfig(ctx, cfg, w, url.Values{"cas": {strconv.FormatUint(cfg.ModifyIndex, 10)}})
}

func (o *Operator) setSchedulerConfig(ctx context.Context, cfg *structs.SchedulerConfiguration, w *WriteOptions, params url.Values) (*structs.SchedulerSetConfigurationResponse, *WriteMeta, error) {
	var out structs.SchedulerSetConfigurationResponse
	meta, err := o.c.write(ctx, http.MethodPut, schedulerConfigPath, cfg, &out, w, params)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}
