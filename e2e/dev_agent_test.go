package e2e

import (
	"fmt"
	"testing"
)

// TestE2E_DevAgent starts `drover agent -dev` as the README's first
// command does (ports moved by a config file so tests can run beside a
// real dev agent) and checks it answers with a leader and simulated GPUs.
func TestE2E_DevAgent(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	cfg := writeFile(t, dir, "ports.hcl", fmt.Sprintf("ports {\n  http = %d\n  rpc = %d\n  serf = %d\n}\n", ports[0], ports[1], ports[2]))
	a := startAgent(t, ports[0], "-dev", "-dev-gpus", "3", "-config", cfg)

	var nodes []struct{ ID string }
	if code := a.getJSON("/v1/nodes", &nodes); code != 200 || len(nodes) != 1 {
		t.Fatalf("nodes: status %d, %d nodes, want one", code, len(nodes))
	}
	if gpus := a.nodeGPUs(nodes[0].ID); len(gpus) != 3 {
		t.Errorf("dev node GPUs: got %d (%v), want 3 simulated", len(gpus), gpus)
	}
	var self map[string]any
	if code := a.getJSON("/v1/agent/self", &self); code != 200 || self["config"] == nil {
		t.Errorf("agent/self: status %d, %v", code, self)
	}
}
