package agent

import (
	"io"
	"strings"
	"testing"
	"time"

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

// TestTopologyReachesTheNode: an agent's topology block shows on its
// node, as the API serves it.
func TestTopologyReachesTheNode(t *testing.T) {
	cfg := DevConfig()
	cfg.Ports = &PortsConfig{HTTP: 0, RPC: 0, Serf: 0}
	cfg.LogLevel = "WARN"
	cfg.DevGPUs = 1
	cfg.Client.Topology = &TopologyConfig{Block: "nvl72-07", Rack: "r12", Spine: "s3"}
	_, base := startAgentConfig(t, cfg, io.Discard)
	var node structs.Node
	deadline := time.Now().Add(15 * time.Second)
	for node.ID == "" {
		var stubs []*structs.NodeListStub
		getJSON(t, base+"/v1/nodes", &stubs)
		if len(stubs) == 1 {
			getJSON(t, base+"/v1/node/"+stubs[0].ID, &node)
		}
		if node.ID == "" && time.Now().After(deadline) {
			t.Fatal("agent has no node after 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for level, want := range map[string]string{structs.TopologyBlock: "nvl72-07", structs.TopologyRack: "r12", structs.TopologySpine: "s3"} {
		if got := node.TopologyValue(level); got != want {
			t.Errorf("node topology.%s: got %q, want %q", level, got, want)
		}
	}
}
