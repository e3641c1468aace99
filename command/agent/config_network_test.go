package agent

import (
	"strings"
	"testing"
)

// TestNetworkConfig: the client's networking settings parse, merge and
// reach what the client reports; bad ones are refused naming the setting.
func TestNetworkConfig(t *testing.T) {
	fc, err := ParseConfig("net.hcl", []byte(`
bind_addr = "127.0.0.2"
client {
  enabled          = true
  min_dynamic_port = 21000
  max_dynamic_port = 21100
  reserved {
    reserved_ports = "22,80,8500-8600"
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
	a := &Agent{config: cfg}
	n := a.network()
	if n.MinDynamicPort != 21000 || n.MaxDynamicPort != 21100 || n.ReservedPorts != "22,80,8500-8600" || n.DefaultIP != "127.0.0.2" {
		t.Errorf("client network: got %+v", n)
	}
	if n := (&Agent{config: DevConfig()}).network(); n.DefaultIP != "127.0.0.1" || n.MinDynamicPort != 20000 || n.MaxDynamicPort != 32000 {
		t.Errorf("dev network: got %+v, want 127.0.0.1 and 20000-32000", n)
	}

	tests := []struct {
		name   string
		mutate func(c *ClientConfig)
		want   string
	}{
		{"min above max", func(c *ClientConfig) { c.MinDynamicPort, c.MaxDynamicPort = 30000, 29000 }, "client.min_dynamic_port 30000 is above max_dynamic_port 29000"},
		{"max not a port", func(c *ClientConfig) { c.MaxDynamicPort = 70000 }, "client.max_dynamic_port 70000 is not a port"},
		{"min above default max", func(c *ClientConfig) { c.MinDynamicPort = 40000 }, "client.min_dynamic_port 40000 is above max_dynamic_port 32000"},
		{"bad reserved ports", func(c *ClientConfig) { c.Reserved = &ReservedConfig{ReservedPorts: "22,ssh"} }, `client.reserved.reserved_ports: port "ssh"`},
		{"reserved range backwards", func(c *ClientConfig) { c.Reserved = &ReservedConfig{ReservedPorts: "90-80"} }, "end before start"},
		{"no such interface", func(c *ClientConfig) { c.NetworkInterface = "nope0" }, `client.network_interface "nope0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DevConfig()
			tt.mutate(c.Client)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
