package agent

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/telemetry"
)

// TestTelemetryConfig parses the README's telemetry block, overrides
// one file by the next, the -dev default and bad values with their
// positions.
func TestTelemetryConfig(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```hcl\ntelemetry {")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README has no telemetry block")
	}
	tests := []struct {
		name    string
		dev     bool
		files   []string
		want    telemetry.Config
		wantErr string
	}{
		{"none", false, nil, telemetry.Config{HostName: "a1"}, ""},
		{"dev serves prometheus", true, nil, telemetry.Config{PrometheusMetrics: true, HostName: "a1"}, ""},
		{"README", false, []string{"telemetry {" + block}, telemetry.Config{PrometheusMetrics: true, CollectionInterval: time.Second, DisableHostname: true, HostName: "a1"}, ""},
		{"dev turned off", true, []string{`telemetry { prometheus_metrics = false }`}, telemetry.Config{HostName: "a1"}, ""},
		{"override one by one", false, []string{`telemetry { collection_interval = "5s" }`, `telemetry { disable_hostname = true }`},
			telemetry.Config{CollectionInterval: 5 * time.Second, DisableHostname: true, HostName: "a1"}, ""},
		{"bad interval", false, []string{"telemetry {\n  collection_interval = \"soon\"\n}"}, telemetry.Config{}, `agent.hcl:2,25: telemetry.collection_interval: "soon" is not a duration`},
		{"negative interval", false, []string{`telemetry { collection_interval = "-1s" }`}, telemetry.Config{}, `agent.hcl:1,35: telemetry.collection_interval: "-1s" must be positive`},
		{"unknown setting", false, []string{"telemetry {\n  statsd_address = \"x\"\n}"}, telemetry.Config{}, `agent.hcl:2,3: Unsupported argument`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tt.dev {
				cfg = DevConfig()
			}
			cfg.Name = "a1"
			for _, src := range tt.files {
				c, err := ParseConfig("agent.hcl", []byte(src))
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("ParseConfig = %v, want an error containing %q", err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("ParseConfig(%q): %v", src, err)
				}
				cfg.Merge(c)
			}
			if errs := cfg.validateTelemetry(); len(errs) > 0 {
				t.Fatalf("validateTelemetry: %v", errs)
			}
			if got := cfg.telemetryConfig(); got != tt.want {
				t.Fatalf("telemetryConfig() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestTelemetryValidate: a bad interval set other than from a file is
// refused by Validate too.
func TestTelemetryValidate(t *testing.T) {
	cfg := DevConfig()
	cfg.Telemetry = &TelemetryConfig{CollectionInterval: "0s"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `telemetry.collection_interval: "0s" must be positive`) {
		t.Fatalf("Validate() = %v, want the collection_interval error", err)
	}
}
