package agent

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestTopologyConfig: the client's topology block parses, merges level by
// level and becomes the node's topology; bad values are refused naming
// the level.
func TestTopologyConfig(t *testing.T) {
	first, err := ParseConfig("a.hcl", []byte(`
client {
  enabled = true
  topology {
    block = "nvl72-07"
    rack  = "r12"
  }
}
`))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	second, err := ParseConfig("b.hcl", []byte(`
client {
  topology {
    spine = "s3"
  }
}
`))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	cfg := DefaultConfig()
	cfg.DataDir = "/d"
	cfg.Server.Enabled = true
	cfg.Merge(first)
	cfg.Merge(second)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	got := cfg.Client.Topology.topology()
	want := structs.NodeTopology{Block: "nvl72-07", Rack: "r12", Spine: "s3"}
	if got == nil || *got != want {
		t.Errorf("topology: got %+v, want %+v", got, want)
	}

	tests := []struct {
		name string
		topo TopologyConfig
		want string
	}{
		{"space", TopologyConfig{Rack: "r 12"}, `client.topology rack: "r 12" holds a space`},
		{"control character", TopologyConfig{Block: "b\x01"}, "topology block:"},
		{"too long", TopologyConfig{Spine: strings.Repeat("s", 65)}, "topology spine: 65 bytes, at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DevConfig()
			c.Client.Topology = &tt.topo
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
