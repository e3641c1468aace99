package agent

import (
	"strings"
	"testing"
	"time"
)

func TestRaftSnapshotConfig(t *testing.T) {
	src := `
server {
  enabled                 = true
  raft_snapshot_threshold = 64
  raft_snapshot_interval  = "30s"
  raft_trailing_logs      = 128
}
`
	c, err := ParseConfig("agent.hcl", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	cfg := DefaultConfig()
	cfg.DataDir = "/tmp/x"
	cfg.Merge(c)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	s := cfg.Server
	if s.RaftSnapshotThreshold != 64 || s.RaftTrailingLogs != 128 {
		t.Errorf("got threshold %d, trailing logs %d; want 64, 128", s.RaftSnapshotThreshold, s.RaftTrailingLogs)
	}
	if d, err := s.raftSnapshotInterval(); err != nil || d != 30*time.Second {
		t.Errorf("interval: got %v, %v; want 30s", d, err)
	}

	tests := []struct {
		name string
		set  func(*ServerConfig)
		want string
	}{
		{"negative threshold", func(s *ServerConfig) { s.RaftSnapshotThreshold = -1 }, "raft_snapshot_threshold -1"},
		{"negative trailing logs", func(s *ServerConfig) { s.RaftTrailingLogs = -5 }, "raft_trailing_logs -5"},
		{"bad interval", func(s *ServerConfig) { s.RaftSnapshotInterval = "soon" }, `raft_snapshot_interval "soon"`},
		{"tiny interval", func(s *ServerConfig) { s.RaftSnapshotInterval = "1ms" }, "at least 5ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DataDir = "/tmp/x"
			cfg.Server.Enabled = true
			tt.set(cfg.Server)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
