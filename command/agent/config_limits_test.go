package agent

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestLimitsConfig parses the README's limits block (the defaults),
// overrides and bad values.
func TestLimitsConfig(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```hcl\nlimits {")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README has no limits block")
	}
	tests := []struct {
		name    string
		files   []string
		want    structs.Limits
		wantErr string
	}{
		{"none", nil, structs.DefaultLimits(), ""},
		{"README", []string{"limits {" + block}, structs.DefaultLimits(), ""},
		{"override one by one", []string{`limits { job_max_count = 50 }`, `limits { http_max_body = "1 MiB" }`}, func() structs.Limits {
			l := structs.DefaultLimits()
			l.JobMaxCount, l.HTTPMaxBody = 50, 1<<20
			return l
		}(), ""},
		{"bad size", []string{`limits { job_max_size = "lots" }`}, structs.Limits{}, `limits.job_max_size "lots"`},
		{"negative", []string{`limits { device_max_count = -1 }`}, structs.Limits{}, "limits.device_max_count -1 must be positive"},
		{"config depth at the cap", []string{`limits { task_config_max_depth = 64 }`}, func() structs.Limits {
			l := structs.DefaultLimits()
			l.TaskConfigMaxDepth = structs.TaskConfigMaxDepthCap
			return l
		}(), ""},
		{"config depth over the cap", []string{`limits { task_config_max_depth = 65 }`}, structs.Limits{}, "limits.task_config_max_depth 65 over 64"},
		{"job size at the cap", []string{`limits { job_max_size = "32MiB" }`}, func() structs.Limits {
			l := structs.DefaultLimits()
			l.JobMaxSize = structs.JobMaxSizeCap
			return l
		}(), ""},
		{"job size over the cap", []string{`limits { job_max_size = "33MiB" }`}, structs.Limits{}, `limits.job_max_size "33MiB" over 33554432 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DevConfig()
			for _, src := range tt.files {
				c, err := ParseConfig("agent.hcl", []byte(src))
				if err != nil {
					t.Fatalf("ParseConfig(%q): %v", src, err)
				}
				cfg.Merge(c)
			}
			got, err := cfg.limits()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("limits() = %v, want an error containing %q", err, tt.wantErr)
				}
				if verr := cfg.Validate(); verr == nil || !strings.Contains(verr.Error(), tt.wantErr) {
					t.Fatalf("Validate() = %v, want an error containing %q", verr, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("limits() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestLimitsConfigApplied starts an agent with job_max_count = 5 and
// checks the HTTP API and the server both use it.
func TestLimitsConfigApplied(t *testing.T) {
	cfg := DevConfig()
	cfg.Ports = &PortsConfig{}
	cfg.LogLevel = "WARN"
	cfg.Client.Enabled = false
	cfg.Limits = &LimitsConfig{JobMaxCount: 5}
	_, base := startAgentConfig(t, cfg, io.Discard)
	code, msg := put(t, base+"/v1/jobs", limitJob("six", "6", `{"Name": "nvidia/gpu"}`, `{"command": "/bin/true"}`))
	if code != 400 || !strings.Contains(msg, "count 6 over the limit 5 (limits.job_max_count)") {
		t.Fatalf("PUT /v1/jobs = %d %q, want 400 naming the limit 5", code, msg)
	}
}

func TestClientArtifactConfig(t *testing.T) {
	good := &Config{Client: &ClientConfig{Artifact: &ArtifactConfig{HTTPMaxSize: "2GiB", HTTPReadTimeout: "10m"}}}
	if errs := good.Client.validateArtifact(); len(errs) != 0 {
		t.Fatalf("validate: %v", errs)
	}
	if n, timeout := good.Client.artifactLimits(); n != 2<<30 || timeout != "10m" {
		t.Errorf("limits = %d %q", n, timeout)
	}
	bad := &ClientConfig{Artifact: &ArtifactConfig{HTTPMaxSize: "lots", HTTPReadTimeout: "-1s"}}
	if errs := bad.validateArtifact(); len(errs) != 2 {
		t.Errorf("validate bad = %v, want 2 errors", errs)
	}
}
