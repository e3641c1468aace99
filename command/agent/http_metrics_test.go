package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestMetricsEndpoint: a dev agent answers /v1/metrics in Nomad's JSON
// and in Prometheus' format, with its simulated GPUs under
// dcgm-exporter's names and the leader's cluster series; a bad format is
// a 400.
func TestMetricsEndpoint(t *testing.T) {
	_, base := newTestAgent(t)
	code, body := send(t, http.MethodGet, base+"/v1/metrics?format=prometheus", "", "")
	if code != http.StatusOK {
		t.Fatalf("prometheus format: %d %q", code, body)
	}
	for _, want := range []string{
		"# TYPE DCGM_FI_DEV_GPU_UTIL gauge", `simulated="true"`, `drover_gpus_total{model="NVIDIA H100 80GB HBM3"} 2`,
		"drover_node_gpus_total{", "drover_raft_",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("prometheus format has no %q", want)
		}
	}
	if n := strings.Count(body, "\nDCGM_FI_DEV_GPU_UTIL{"); n != 2 {
		t.Errorf("prometheus format has %d DCGM_FI_DEV_GPU_UTIL series, want one per GPU (2)", n)
	}

	code, body = send(t, http.MethodGet, base+"/v1/metrics", "", "")
	var sum struct {
		Timestamp                         string
		Gauges, Counters, Samples, Points []map[string]any
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &sum) != nil {
		t.Fatalf("JSON format: %d %q", code, body)
	}
	gpus := 0
	for _, g := range sum.Gauges {
		if g["Name"] == "DCGM_FI_DEV_GPU_UTIL" {
			gpus++
		}
	}
	if gpus != 2 || sum.Counters == nil || sum.Samples == nil {
		t.Errorf("JSON format: %d GPU gauges (want 2), counters %v, samples %v", gpus, sum.Counters, sum.Samples)
	}

	nc, err := nomad.NewClient(&nomad.Config{Address: base})
	if err != nil {
		t.Fatal(err)
	}
	ns, _, err := nc.Operator().MetricsSummary(nil)
	if err != nil || len(ns.Gauges) == 0 {
		t.Errorf("Nomad's Operator().MetricsSummary = %v, %v; want the gauges", ns, err)
	}

	if code, body = send(t, http.MethodGet, base+"/v1/metrics?format=xml", "", ""); code != http.StatusBadRequest || !strings.Contains(body, `format "xml"`) {
		t.Errorf("format=xml: %d %q, want 400 naming the format", code, body)
	}
}

// TestMetricsPrometheusOff: without prometheus_metrics the Prometheus
// format is refused with the setting to change.
func TestMetricsPrometheusOff(t *testing.T) {
	cfg := DevConfig()
	cfg.Ports = &PortsConfig{}
	cfg.LogLevel = "WARN"
	cfg.Client.Enabled = false
	off := false
	cfg.Telemetry = &TelemetryConfig{PrometheusMetrics: &off}
	_, base := startAgentConfig(t, cfg, io.Discard)
	code, body := send(t, http.MethodGet, base+"/v1/metrics?format=prometheus", "", "")
	if code != http.StatusUnsupportedMediaType || !strings.Contains(body, "prometheus_metrics = true") {
		t.Fatalf("format=prometheus with it off: %d %q, want 415 naming the setting", code, body)
	}
}

// TestMetricsNeedAgentRead: with ACLs on, /v1/metrics wants a token with
// agent read, sent as Prometheus sends it (Authorization: Bearer).
func TestMetricsNeedAgentRead(t *testing.T) {
	_, base, mgmt := newACLAgent(t)
	reader := createToken(t, base, mgmt, "scraper", `agent { policy = "read" }`)
	other := createToken(t, base, mgmt, "ops", `namespace "default" { policy = "read" }`)
	bearer := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/metrics?format=prometheus", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		name, token string
		want        int
	}{{"anonymous", "", 403}, {"namespace reader", other, 403}, {"agent reader", reader, 200}} {
		if got := bearer(tt.token); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
