package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/server"
)

const issueConfig = `
name       = "node-a"
data_dir   = "/var/lib/drover"
bind_addr  = "127.0.0.1"
datacenter = "dc1"
ports {
  http = 4646
  rpc  = 4647
  serf = 4648
}
server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled = true
  simulated_gpu {
    count              = 4
    model              = "NVIDIA H100 80GB HBM3"
    memory             = "80 GiB"
    compute_capability = "9.0"
  }
}
`

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte(issueConfig))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	cfg := DefaultConfig()
	cfg.Merge(c)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if cfg.Name != "node-a" || cfg.DataDir != "/var/lib/drover" || cfg.BindAddr != "127.0.0.1" || cfg.Datacenter != "dc1" {
		t.Errorf("top level: got %+v", cfg)
	}
	if *cfg.Ports != (PortsConfig{HTTP: 4646, RPC: 4647, Serf: 4648}) {
		t.Errorf("ports: got %+v", *cfg.Ports)
	}
	if !cfg.Server.Enabled || cfg.Server.BootstrapExpect != 1 || !cfg.Client.Enabled {
		t.Errorf("server/client: got %+v %+v", *cfg.Server, *cfg.Client)
	}
	g := cfg.Client.SimulatedGPU
	if len(g) != 1 || g[0].Count != 4 || g[0].Memory != "80 GiB" || g[0].ComputeCapability != "9.0" || g[0].Model != "NVIDIA H100 80GB HBM3" {
		t.Errorf("simulated_gpu: got %+v", g)
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "name = \n", "agent.hcl:1,"},
		{"unknown key", "name = \"a\"\ncolour = \"red\"\n", "agent.hcl:2,1"},
		{"wrong type", "ports {\n  http = \"x\"\n}\n", "agent.hcl:2,"},
		{"bad memory", "client {\n  simulated_gpu {\n    count = 1\n    memory = \"80 parsecs\"\n  }\n}\n", "memory"},
		{"negative count", "client {\n  simulated_gpu {\n    count = -1\n  }\n}\n", "negative"},
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

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"nothing enabled", func(c *Config) {}, "enable the server"},
		{"no data dir", func(c *Config) { c.Server.Enabled = true }, "data_dir"},
		{"bad bind", func(c *Config) { c.Server.Enabled, c.DataDir, c.BindAddr = true, "/d", "nowhere" }, "bind_addr"},
		{"client without servers", func(c *Config) { c.Client.Enabled, c.DataDir = true, "/d" }, "client.servers"},
		{"negative bootstrap_expect", func(c *Config) { c.Server.Enabled, c.DataDir, c.Server.BootstrapExpect = true, "/d", -1 }, "bootstrap_expect -1 must not be negative"},
		{"dev with a cluster", func(c *Config) { c.DevMode, c.Server.Enabled, c.Server.BootstrapExpect = true, true, 3 }, "-dev runs a single server"},
		{"bad retry_interval", func(c *Config) {
			c.Server.Enabled, c.DataDir = true, "/d"
			c.Server.ServerJoin = &ServerJoinConfig{RetryJoin: []string{"a:4648"}, RetryInterval: "soon"}
		}, `retry_interval: "soon" is not a duration`},
		{"zero retry_interval", func(c *Config) {
			c.Server.Enabled, c.DataDir = true, "/d"
			c.Server.ServerJoin = &ServerJoinConfig{RetryInterval: "0s"}
		}, "must be positive"},
		{"empty retry_join address", func(c *Config) {
			c.Server.Enabled, c.DataDir = true, "/d"
			c.Server.ServerJoin = &ServerJoinConfig{RetryJoin: []string{" "}}
		}, "empty address"},
		{"negative retry_max", func(c *Config) {
			c.Server.Enabled, c.DataDir = true, "/d"
			c.Server.ServerJoin = &ServerJoinConfig{RetryMax: -2}
		}, "retry_max -2"},
		{"bad dead_server_timeout", func(c *Config) { c.Server.Enabled, c.DataDir, c.Server.DeadServerTimeout = true, "/d", "-5m" }, "dead_server_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if err := DevConfig().Validate(); err != nil {
		t.Errorf("dev config: %v", err)
	}
}

func TestReadConfigFlags(t *testing.T) {
	c := &Command{}
	cfg, err := c.readConfig([]string{"--dev", "-dev-gpus", "2", "-log-level=WARN"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.DevMode || cfg.DevGPUs != 2 || cfg.LogLevel != "WARN" || !cfg.Server.Enabled || !cfg.Client.Enabled {
		t.Errorf("got %+v", cfg)
	}
	if _, err := c.readConfig([]string{"-dev-gpus", "2"}); err == nil {
		t.Errorf("-dev-gpus without -dev: want an error")
	}
	if _, err := c.readConfig([]string{"-nope"}); err == nil {
		t.Errorf("unknown flag: want an error")
	}
}

const clusterConfig = `
server {
  enabled             = true
  bootstrap_expect    = 3
  dead_server_timeout = "2m"
  server_join {
    retry_join     = ["10.0.0.2:4648", "10.0.0.3"]
    retry_interval = "5s"
    retry_max      = 10
  }
}
ports {
  serf = 5648
}
`

// TestClusterConfig: bootstrap_expect > 1, server_join and the serf port
// parse, merge, validate and reach the server's config.
func TestClusterConfig(t *testing.T) {
	fc, err := ParseConfig("cluster.hcl", []byte(clusterConfig))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	cfg := DefaultConfig()
	cfg.DataDir, cfg.BindAddr = "/d", "10.0.0.1"
	cfg.Merge(fc)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	j := cfg.Server.ServerJoin
	if cfg.Server.BootstrapExpect != 3 || j == nil || len(j.RetryJoin) != 2 || j.RetryInterval != "5s" || j.RetryMax != 10 {
		t.Fatalf("server: got %+v join %+v", cfg.Server, j)
	}
	if cfg.Ports.Serf != 5648 || cfg.Ports.RPC != 4647 {
		t.Errorf("ports: got %+v", *cfg.Ports)
	}
	sc := &server.Config{}
	if err := cfg.applyCluster(sc); err != nil {
		t.Fatal(err)
	}
	if sc.SerfAddr.String() != "10.0.0.1:5648" || sc.RetryJoinInterval != 5*time.Second || sc.RetryJoinMaxAttempts != 10 ||
		sc.DeadServerTimeout != 2*time.Minute || strings.Join(sc.RetryJoin, ",") != "10.0.0.2:4648,10.0.0.3" {
		t.Errorf("server config: got serf %s, join %v every %s (max %d), dead timeout %s",
			sc.SerfAddr, sc.RetryJoin, sc.RetryJoinInterval, sc.RetryJoinMaxAttempts, sc.DeadServerTimeout)
	}

	// A later file's server_join replaces the addresses and keeps what it
	// does not set.
	cfg.Merge(&Config{Server: &ServerConfig{ServerJoin: &ServerJoinConfig{RetryJoin: []string{"10.0.0.9:4648"}}}})
	if j := cfg.Server.ServerJoin; strings.Join(j.RetryJoin, ",") != "10.0.0.9:4648" || j.RetryInterval != "5s" {
		t.Errorf("merged server_join: got %+v", j)
	}
}

func TestBootstrapExpectDefault(t *testing.T) {
	tests := []struct {
		name string
		s    ServerConfig
		want int
	}{
		{"unset: a lone server", ServerConfig{}, 1},
		{"unset with retry_join: join, never bootstrap", ServerConfig{ServerJoin: &ServerJoinConfig{RetryJoin: []string{"a"}}}, 0},
		{"set", ServerConfig{BootstrapExpect: 3, ServerJoin: &ServerJoinConfig{RetryJoin: []string{"a"}}}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.bootstrapExpect(); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
