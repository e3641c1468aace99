package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostVolumeConfig: host_volume blocks parse, merge (a later file
// replaces a volume of the same name) and reach the client's config; a
// path that is relative, missing or a file is refused, named.
func TestHostVolumeConfig(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	parse := func(src string) *Config {
		t.Helper()
		c, err := ParseConfig("agent.hcl", []byte(src))
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		return c
	}
	cfg := DefaultConfig()
	cfg.Server.Enabled, cfg.Client.Enabled, cfg.DataDir = true, true, "/d"
	cfg.Merge(parse(`client {
  host_volume "data" {
    path = "` + dir + `"
  }
  host_volume "ro" {
    path      = "` + dir + `"
    read_only = true
  }
}`))
	cfg.Merge(parse(`client {
  host_volume "data" {
    path = "` + other + `"
  }
}`))
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	got := cfg.Client.hostVolumes()
	if len(got) != 2 || got["data"].Path != other || got["data"].ReadOnly || !got["ro"].ReadOnly || got["ro"].Name != "ro" {
		t.Errorf("host volumes: got %+v %+v", got["data"], got["ro"])
	}

	tests := []struct{ name, path, want string }{
		{"relative", "srv/data", `client.host_volume "v": path "srv/data" must be absolute`},
		{"missing", filepath.Join(dir, "nope"), `client.host_volume "v": path ` + filepath.Join(dir, "nope") + ` does not exist`},
		{"file", file, "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Server.Enabled, c.Client.Enabled, c.DataDir = true, true, "/d"
			c.Client.HostVolumes = []*HostVolumeConfig{{Name: "v", Path: tt.path}}
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := ParseConfig("agent.hcl", []byte("client {\n  host_volume \"x\" {\n    read_only = true\n  }\n}\n")); err == nil || !strings.Contains(err.Error(), "agent.hcl:2,") {
		t.Errorf("host_volume without path: got %v, want a positioned error", err)
	}
}
