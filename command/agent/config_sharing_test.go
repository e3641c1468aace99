package agent

import (
	"maps"
	"strings"
	"testing"
)

func TestParseGPUSharing(t *testing.T) {
	const src = `
client {
  enabled = true
  gpu_sharing {
    mode        = "exclusive"
    mps_control = "/opt/nvidia/bin/nvidia-cuda-mps-control"
    model "NVIDIA A100-SXM4-40GB" {
      mode = "mig"
    }
    model "H100 80GB HBM3" {
      mode = "mps"
    }
    gpu "GPU-5c6a8d5e-0000-4000-8000-000000000001" {
      mode = "time-slicing"
    }
  }
}
`
	c, err := ParseConfig("agent.hcl", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	cfg := DefaultConfig()
	cfg.Merge(c)
	p := cfg.Client.GPUSharing.policy()
	if p.Mode != "exclusive" {
		t.Errorf("mode: got %q", p.Mode)
	}
	if want := map[string]string{"NVIDIA A100-SXM4-40GB": "mig", "H100 80GB HBM3": "mps"}; !maps.Equal(p.Models, want) {
		t.Errorf("models: got %v, want %v", p.Models, want)
	}
	if want := map[string]string{"GPU-5c6a8d5e-0000-4000-8000-000000000001": "time-slicing"}; !maps.Equal(p.GPUs, want) {
		t.Errorf("gpus: got %v, want %v", p.GPUs, want)
	}
	if got := cfg.Client.GPUSharing.mpsControl(); got != "/opt/nvidia/bin/nvidia-cuda-mps-control" {
		t.Errorf("mps_control: got %q", got)
	}

	// No block: an empty policy, defaults decided per GPU by the client.
	var none *GPUSharingConfig
	if p := none.policy(); p.Mode != "" || p.Models != nil || p.GPUs != nil || none.mpsControl() != "" {
		t.Errorf("no block: got %+v", p)
	}
}

func TestParseGPUSharingErrors(t *testing.T) {
	wrap := func(body string) string { return "client {\n  gpu_sharing {\n" + body + "  }\n}\n" }
	tests := []struct {
		name, src, want string
	}{
		{"unknown mode", wrap("    mode = \"shared\"\n"),
			`agent.hcl:3,12: gpu_sharing: mode "shared" is not one of exclusive, mps, mig, time-slicing`},
		{"unknown model mode", wrap("    model \"A100\" {\n      mode = \"MPS\"\n    }\n"),
			`agent.hcl:4,14: gpu_sharing model "A100": mode "MPS" is not one of`},
		{"gpu by index", wrap("    gpu \"0\" {\n      mode = \"mps\"\n    }\n"),
			`agent.hcl:3,9: gpu_sharing gpu "0": a gpu is named by its UUID`},
		{"repeated gpu", wrap("    gpu \"GPU-a\" {\n      mode = \"mps\"\n    }\n    gpu \"GPU-a\" {\n      mode = \"exclusive\"\n    }\n"),
			`agent.hcl:6,9: gpu_sharing gpu "GPU-a": repeated (first at line 3)`},
		{"empty model", wrap("    model \"\" {\n      mode = \"mps\"\n    }\n"),
			`agent.hcl:3,11: gpu_sharing model: the label must name a model`},
		{"entry without mode", wrap("    model \"A100\" {\n    }\n"),
			`agent.hcl:3,18: Missing required argument`},
		{"unknown key", wrap("    modes = \"mps\"\n"),
			`agent.hcl:3,5: Unsupported argument`},
		{"mode of the wrong type", wrap("    mode = 3\n"),
			`agent.hcl:3,12: gpu_sharing: mode "3" is not one of`},
		{"two blocks", "client {\n  gpu_sharing {\n  }\n  gpu_sharing {\n  }\n}\n",
			`agent.hcl:4,3: Duplicate gpu_sharing block`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("agent.hcl", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
