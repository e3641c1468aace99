package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckpointRootConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(root string) (*Config, error) {
		c, err := ParseConfig("agent.hcl", []byte(`client {
  checkpoint_root = "`+root+`"
}`))
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		cfg := DefaultConfig()
		cfg.Server.Enabled, cfg.Client.Enabled, cfg.DataDir = true, true, "/d"
		cfg.Merge(c)
		return cfg, cfg.Validate()
	}
	cfg, err := load(dir + "/")
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	if got := cfg.Client.checkpointRoot(); got != dir {
		t.Errorf("checkpointRoot = %q, want %q", got, dir)
	}
	tests := []struct{ name, root, want string }{
		{"relative", "srv/ckpt", `client.checkpoint_root: path "srv/ckpt" must be absolute`},
		{"missing", dir + "/nope", "client.checkpoint_root: path " + dir + "/nope does not exist"},
		{"file", file, "client.checkpoint_root: path " + file + " is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.root)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate = %v, want %q", err, tt.want)
			}
		})
	}
}
