package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclsimple"
)

func TestHCLConfig(t *testing.T) {
	tests := []struct {
		name    string
		hcl     HCL
		dataDir string
		want    Config
	}{
		{
			name:    "defaults",
			hcl:     HCL{Enabled: true},
			dataDir: "/var/lib/drover",
			want:    Config{Path: "/var/lib/drover/audit/audit.log", RotateBytes: 100 << 20, RotateDuration: 24 * time.Hour, RotateMaxFiles: 10},
		},
		{
			name:    "zeros are defaults",
			hcl:     HCL{RotateDuration: "0s"},
			dataDir: "/d",
			want:    Config{Path: "/d/audit/audit.log", RotateBytes: 100 << 20, RotateDuration: 24 * time.Hour, RotateMaxFiles: 10},
		},
		{
			name:    "all set",
			hcl:     HCL{Path: "/log/a.log", RotateBytes: 1024, RotateDuration: "90m", RotateMaxFiles: 3},
			dataDir: "/d",
			want:    Config{Path: "/log/a.log", RotateBytes: 1024, RotateDuration: 90 * time.Minute, RotateMaxFiles: 3},
		},
		{
			name: "path without data dir",
			hcl:  HCL{Path: "/log/a.log"},
			want: Config{Path: "/log/a.log", RotateBytes: 100 << 20, RotateDuration: 24 * time.Hour, RotateMaxFiles: 10},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.hcl.Config(tt.dataDir)
			if err != nil {
				t.Fatalf("Config: %v", err)
			}
			if got != tt.want {
				t.Errorf("Config = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHCLConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		hcl  HCL
		want []string
	}{
		{"bad duration", HCL{RotateDuration: "daily"}, []string{`audit.rotate_duration "daily"`, "invalid duration"}},
		{"duration without unit", HCL{RotateDuration: "24"}, []string{`audit.rotate_duration "24"`}},
		{"negative duration", HCL{RotateDuration: "-1h"}, []string{`audit.rotate_duration "-1h": must not be negative`}},
		{"negative bytes", HCL{RotateBytes: -1}, []string{"audit.rotate_bytes -1: must not be negative"}},
		{"negative max files", HCL{RotateMaxFiles: -2}, []string{"audit.rotate_max_files -2: must not be negative"}},
		{"every error at once", HCL{RotateBytes: -1, RotateDuration: "x", RotateMaxFiles: -1}, []string{"audit.rotate_bytes", "audit.rotate_duration", "audit.rotate_max_files"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.hcl.Config("/d")
			if err == nil {
				t.Fatal("Config: no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error = %q, want it to contain %q", err, w)
				}
			}
		})
	}
	if _, err := (&HCL{}).Config(""); err == nil || !strings.Contains(err.Error(), "audit.path") {
		t.Errorf("no path, no data dir: error = %v, want one naming audit.path", err)
	}
}

// TestHCLDecodes checks the tags against the block as an operator writes it.
func TestHCLDecodes(t *testing.T) {
	src := `
audit {
  enabled          = true
  path             = "/var/lib/drover/audit/audit.log"
  rotate_bytes     = 104857600
  rotate_duration  = "24h"
  rotate_max_files = 10
}
`
	var file struct {
		Audit *HCL `hcl:"audit,block"`
	}
	if err := hclsimple.Decode("agent.hcl", []byte(src), nil, &file); err != nil {
		t.Fatalf("decode: %v", err)
	}
	want := HCL{Enabled: true, Path: "/var/lib/drover/audit/audit.log", RotateBytes: 104857600, RotateDuration: "24h", RotateMaxFiles: 10}
	if file.Audit == nil || *file.Audit != want {
		t.Errorf("decoded = %+v, want %+v", file.Audit, want)
	}
}
