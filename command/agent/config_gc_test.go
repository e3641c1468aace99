package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/server"
)

// TestGCConfig: the server's and the client's GC settings parse, merge
// and reach the server's config; a bad one is refused with an error
// naming it.
func TestGCConfig(t *testing.T) {
	fc, err := ParseConfig("gc.hcl", []byte(`
server {
  enabled           = true
  gc_interval       = "30s"
  job_gc_threshold  = "2h"
  eval_gc_threshold = "10m"
}
client {
  enabled                 = true
  gc_interval             = "15s"
  gc_max_allocs           = 20
  gc_disk_usage_threshold = 90.5
}
`))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	cfg := DefaultConfig()
	cfg.DataDir = "/d"
	cfg.Merge(fc)
	cfg.Merge(&Config{Server: &ServerConfig{NodeGCThreshold: "48h"}})
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	sc := &server.Config{}
	cfg.Server.applyGC(sc)
	if sc.GCInterval != 30*time.Second || sc.JobGCThreshold != 2*time.Hour || sc.EvalGCThreshold != 10*time.Minute || sc.NodeGCThreshold != 48*time.Hour {
		t.Errorf("server config: got interval %s, thresholds job %s eval %s node %s",
			sc.GCInterval, sc.JobGCThreshold, sc.EvalGCThreshold, sc.NodeGCThreshold)
	}

	if cl := cfg.Client; mustDuration(cl.GCInterval) != 15*time.Second || cl.GCMaxAllocs != 20 || cl.GCDiskUsageThreshold != 90.5 {
		t.Errorf("client: got gc_interval %q, gc_max_allocs %d, gc_disk_usage_threshold %g", cl.GCInterval, cl.GCMaxAllocs, cl.GCDiskUsageThreshold)
	}

	tests := []struct {
		name   string
		mutate func(s *ServerConfig)
		want   string
	}{
		{"gc_interval not a duration", func(s *ServerConfig) { s.GCInterval = "often" }, `server.gc_interval: "often" is not a duration`},
		{"negative job_gc_threshold", func(s *ServerConfig) { s.JobGCThreshold = "-1h" }, "server.job_gc_threshold"},
		{"zero eval_gc_threshold", func(s *ServerConfig) { s.EvalGCThreshold = "0s" }, "server.eval_gc_threshold"},
		{"bad node_gc_threshold", func(s *ServerConfig) { s.NodeGCThreshold = "1 day" }, "server.node_gc_threshold"},
	}
	clientTests := []struct {
		name   string
		mutate func(c *ClientConfig)
		want   string
	}{
		{"client gc_interval", func(c *ClientConfig) { c.GCInterval = "-1m" }, "client.gc_interval"},
		{"negative gc_max_allocs", func(c *ClientConfig) { c.GCMaxAllocs = -1 }, "client.gc_max_allocs -1"},
		{"gc_disk_usage_threshold over 100", func(c *ClientConfig) { c.GCDiskUsageThreshold = 120 }, "client.gc_disk_usage_threshold 120"},
	}
	for _, tt := range clientTests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Client.Enabled, c.Client.Servers, c.DataDir = true, []string{"127.0.0.1:4647"}, "/d"
			tt.mutate(c.Client)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Server.Enabled, c.DataDir = true, "/d"
			tt.mutate(c.Server)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
