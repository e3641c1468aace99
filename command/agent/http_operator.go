package agent

import (
	"net/http"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// operatorRoutes serves the cluster-wide settings an operator reads and
// changes, in Nomad's shapes.
func (h *httpAPI) operatorRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/operator/scheduler/configuration", h.wrap(h.schedulerConfigRead))
	m.HandleFunc("PUT /v1/operator/scheduler/configuration", h.wrap(h.schedulerConfigUpdate))
	m.HandleFunc("POST /v1/operator/scheduler/configuration", h.wrap(h.schedulerConfigUpdate))
}

// schedulerConfigRead answers {"SchedulerConfig": {...}, "Index": N, ...}:
// the configuration the operator set, or the default one.
func (h *httpAPI) schedulerConfigRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SchedulerConfigurationResponse
	if err := h.read(w, r, structs.RPCOperatorSchedulerGetConfiguration, &structs.SchedulerConfigurationRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return &reply, nil
}

// schedulerConfigUpdate takes the configuration as the body and answers
// {"Updated": bool, "Index": N}. With ?cas=<index> it applies only if the
// stored configuration is still at that index (0: none set yet).
func (h *httpAPI) schedulerConfigUpdate(w http.ResponseWriter, r *http.Request) (any, error) {
	var cfg structs.SchedulerConfiguration
	if err := h.decodeBody(r, &cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid scheduler configuration: %v", err)
	}
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	req := &structs.SchedulerSetConfigRequest{Config: &cfg, WriteRequest: structs.WriteRequest{Region: o.Region}}
	if v := r.URL.Query().Get("cas"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "cas %q: not an index", v)
		}
		req.CAS, cfg.ModifyIndex = true, idx
	}
	var resp structs.SchedulerSetConfigurationResponse
	if err := h.rpc(r, structs.RPCOperatorSchedulerSetConfiguration, req, &resp); err != nil {
		return nil, err
	}
	setIndex(w, resp.Index)
	return &resp, nil
}
