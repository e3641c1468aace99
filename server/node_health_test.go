package server

import (
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestServer_UnhealthyGPUReplaced: a node re-registering with one of an
// allocation's GPUs unhealthy gets a node-update evaluation for the job,
// and the scheduler replaces the allocation on healthy GPUs.
func TestServer_UnhealthyGPUReplaced(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("gpu-1", 4)
	registerNode(t, c, node)
	registerJob(t, s, gpuJob("train", structs.JobTypeService, 1, 1))
	waitFor(t, 5*time.Second, func() (bool, string) {
		return len(liveAllocs(t, s, "train")) == 1, "no allocation placed"
	})
	orig := liveAllocs(t, s, "train")[0]
	bad := orig.DeviceIDs()[0]

	// Re-registering unchanged creates no evaluation.
	before := len(nodeUpdateEvals(t, s))
	registerNode(t, c, node)
	if got := len(nodeUpdateEvals(t, s)); got != before {
		t.Errorf("node-update evals after an unchanged registration: got %d, want %d", got, before)
	}

	sick := node.Copy()
	for _, inst := range sick.NodeResources.Devices[0].Instances {
		if inst.ID == bad {
			inst.Healthy, inst.HealthDescription = false, "XID 79 (simulated)"
		}
	}
	registerNode(t, c, sick)
	evals := nodeUpdateEvals(t, s)
	if len(evals) != before+1 || evals[len(evals)-1].JobID != "train" || evals[len(evals)-1].NodeID != node.ID {
		t.Fatalf("node-update evals: got %d (%+v), want one more for job train on the node", len(evals), evals)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		live := liveAllocs(t, s, "train")
		return len(live) == 1 && live[0].ID != orig.ID, "original not replaced"
	})
	repl := liveAllocs(t, s, "train")[0]
	if slices.Contains(repl.DeviceIDs(), bad) || len(repl.DeviceIDs()) != 1 {
		t.Errorf("replacement GPUs: got %v, want one that is not %s", repl.DeviceIDs(), bad)
	}
	stopped, err := s.State().AllocByID(nil, orig.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := "GPU " + bad + " unhealthy: XID 79 (simulated)"; stopped.DesiredDescription != want {
		t.Errorf("original: got %q, want %q", stopped.DesiredDescription, want)
	}
}

func nodeUpdateEvals(t *testing.T, s *Server) []*structs.Evaluation {
	t.Helper()
	all, err := s.State().Evals(nil, "*")
	if err != nil {
		t.Fatal(err)
	}
	var out []*structs.Evaluation
	for _, e := range all {
		if e.TriggeredBy == structs.EvalTriggerNodeUpdate {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *structs.Evaluation) int { return int(a.CreateIndex) - int(b.CreateIndex) })
	return out
}

func TestDeviceHealthChanged(t *testing.T) {
	base := gpuNode("n", 2)
	id0 := base.NodeResources.Devices[0].Instances[0].ID
	with := func(fn func(n *structs.Node)) *structs.Node {
		n := base.Copy()
		fn(n)
		return n
	}
	tests := []struct {
		name     string
		old, cur *structs.Node
		want     string
	}{
		{"new node, healthy", nil, base, ""},
		{"unchanged", base, base.Copy(), ""},
		{"became unhealthy", base, with(func(n *structs.Node) { n.NodeResources.Devices[0].Instances[0].Healthy = false }), id0},
		{"recovered", with(func(n *structs.Node) { n.NodeResources.Devices[0].Instances[0].Healthy = false }), base, id0},
		{"new node, unhealthy GPU", nil, with(func(n *structs.Node) { n.NodeResources.Devices[0].Instances[0].Healthy = false }), id0},
		{"GPU gone", base, with(func(n *structs.Node) { n.NodeResources.Devices[0].Instances = n.NodeResources.Devices[0].Instances[1:] }), id0},
		{"description only", base, with(func(n *structs.Node) { n.NodeResources.Devices[0].Instances[0].HealthDescription = "x" }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deviceHealthChanged(tt.old, tt.cur); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
