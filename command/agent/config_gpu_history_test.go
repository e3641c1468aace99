package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/client/gpuhistory"
)

// TestGPUHistoryConfig: client.gpu_history parses, merges and reaches the
// client's config; bad settings are refused naming the file position,
// the setting and the limit.
func TestGPUHistoryConfig(t *testing.T) {
	fc, err := ParseConfig("h.hcl", []byte(`
client {
  enabled = true
  gpu_history {
    interval    = "2s"
    window      = "30m"
    idle_window = "1m"
  }
}
`))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	cfg := DefaultConfig()
	cfg.DataDir = "/d"
	cfg.Server.Enabled = true
	cfg.Merge(fc)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	want := gpuhistory.Config{Interval: 2 * time.Second, Window: 30 * time.Minute, IdleWindow: time.Minute}
	if got := cfg.Client.GPUHistory.config(); got != want {
		t.Errorf("client config: got %+v, want %+v", got, want)
	}
	if got := (*GPUHistoryConfig)(nil).config(); got != (gpuhistory.Config{}) {
		t.Errorf("no block: got %+v, want the defaults (zero)", got)
	}

	tests := []struct {
		name, block, want string
	}{
		{"interval not a duration", `interval = "often"`, `h.hcl:5,16: gpu_history interval: "often" is not a duration`},
		{"negative window", `window = "-1h"`, `h.hcl:5,14: gpu_history window: "-1h" must be positive`},
		{"zero idle_window", `idle_window = "0s"`, `h.hcl:5,19: gpu_history idle_window`},
		{"too many samples", "interval = \"1s\"\n    window = \"3h\"", "h.hcl:4,3: gpu history window 3h0m0s at interval 1s is 10800 samples per GPU, over the limit 10000"},
		{"interval under the minimum", `interval = "10ms"`, "h.hcl:4,3: gpu history interval 10ms is under the minimum 100ms"},
		{"window under the interval", "interval = \"1m\"\n    window = \"10s\"", "h.hcl:4,3: gpu history window 10s is shorter than its interval 1m0s"},
		{"unknown setting", `every = "1s"`, `h.hcl:5,5: Unsupported argument`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "client {\n  enabled = true\n  # history\n  gpu_history {\n    " + tt.block + "\n  }\n}\n"
			_, err := ParseConfig("h.hcl", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}

	// Merged from flags or several files, Validate checks it too.
	cfg.Client.GPUHistory = &GPUHistoryConfig{Interval: "1s", Window: "24h"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "client.gpu_history: gpu history window 24h0m0s at interval 1s is 86400 samples per GPU, over the limit 10000") {
		t.Errorf("validate: got %v, want the sample limit named", err)
	}
	cfg.Client.GPUHistory = &GPUHistoryConfig{IdleWindow: "soon"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `client.gpu_history.idle_window: "soon" is not a duration`) {
		t.Errorf("validate: got %v, want idle_window named", err)
	}
}
