package agent

import (
	"net/http"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// metricsRoutes serves this agent's metrics, in Nomad's JSON or, with
// ?format=prometheus, in Prometheus' text format. They are the agent's
// own (its client's GPUs, and the cluster's when its server leads), so
// a Prometheus scrapes every agent. With ACLs on they need a token with
// agent read, which Prometheus sends as a bearer token.
func (h *httpAPI) metricsRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/metrics", h.metrics)
}

func (h *httpAPI) metrics(w http.ResponseWriter, r *http.Request) {
	defer h.recoverPanic(w, r)
	if err := h.authorizeAgent(r, (*acl.ACL).AllowAgentRead); err != nil {
		h.writeError(w, r, err)
		return
	}
	if h.telemetry == nil {
		h.writeError(w, r, errorf(http.StatusNotImplemented, "metrics: this agent keeps none"))
		return
	}
	switch format := r.URL.Query().Get("format"); format {
	case "prometheus":
		if !h.telemetry.PrometheusEnabled() {
			h.writeError(w, r, errorf(http.StatusUnsupportedMediaType, "metrics: format=prometheus needs telemetry { prometheus_metrics = true } in the agent config"))
			return
		}
		h.telemetry.PrometheusHandler().ServeHTTP(w, r)
	case "", "json":
		h.wrap(func(w http.ResponseWriter, _ *http.Request) (any, error) {
			// Nomad's Go client (Operator().MetricsSummary) reads the
			// X-Nomad-* headers of every answer; the metrics are the
			// agent's own, with no index of their own.
			setMeta(w, structs.QueryMeta{})
			return h.telemetry.Summary()
		})(w, r)
	default:
		h.writeError(w, r, errorf(http.StatusBadRequest, "metrics: format %q: want prometheus or json", format))
	}
}
