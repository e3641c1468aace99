package scheduler_test

import (
	"slices"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// failGPU stores the node again with instance id unhealthy, as a client
// re-registering after an XID does.
func failGPU(t *testing.T, h *schedtest.Harness, nodeID, id, reason string) {
	t.Helper()
	n, err := h.State.NodeByID(nil, nodeID)
	if err != nil || n == nil {
		t.Fatalf("read node %s: %v", nodeID, err)
	}
	n = n.Copy()
	for _, g := range n.NodeResources.Devices {
		for _, inst := range g.Instances {
			if inst.ID == id {
				inst.Healthy, inst.HealthDescription = false, reason
			}
		}
	}
	h.UpsertNode(n)
}

// TestUnhealthyGPUAllocReplaced: an allocation holding a GPU its node
// reports unhealthy is stopped with the reason and its name placed again
// on healthy GPUs: on the same node while it has enough, else elsewhere.
func TestUnhealthyGPUAllocReplaced(t *testing.T) {
	tests := []struct {
		name         string
		nodeGPUs     []int // GPUs per node
		wantSameNode bool
	}{
		{"free healthy GPUs on the same node", []int{4}, true},
		{"node full, replaced on another node", []int{2, 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			for i, n := range tt.nodeGPUs {
				h.UpsertNode(schedtest.Node([]string{"gpu-a", "gpu-b"}[i], n, "", 80))
			}
			process(t, h, h.RegisterJob(schedtest.GPUJob("train", 1, 2)))
			orig := onlyAlloc(t, h, "train")
			bad := orig.DeviceIDs()[1]
			const reason = "XID 79: GPU has fallen off the bus"
			failGPU(t, h, orig.NodeID, bad, reason)

			process(t, h, h.NewEval(h.Job(ns, "train"), structs.EvalTriggerNodeUpdate))

			stopped := allocByID(t, h, orig.ID)
			if want := "GPU " + bad + " unhealthy: " + reason; stopped.DesiredStatus != structs.AllocDesiredStatusStop || stopped.DesiredDescription != want {
				t.Errorf("original: got %s %q, want stop %q", stopped.DesiredStatus, stopped.DesiredDescription, want)
			}
			repl := onlyAlloc(t, h, "train")
			if repl.ID == orig.ID || repl.Name != orig.Name {
				t.Fatalf("replacement: got %s (%s), want a new alloc named %s", repl.ID, repl.Name, orig.Name)
			}
			ids := repl.DeviceIDs()
			if len(ids) != 2 || slices.Contains(ids, bad) {
				t.Errorf("replacement GPUs: got %v, want 2 without %s", ids, bad)
			}
			if got := repl.NodeID == orig.NodeID; got != tt.wantSameNode {
				t.Errorf("replacement on the same node: got %v, want %v", got, tt.wantSameNode)
			}
			node, _ := h.State.NodeByID(nil, repl.NodeID)
			if p := node.DeviceProblem(repl); p != "" {
				t.Errorf("replacement devices: %s", p)
			}
		})
	}
}

// TestHealthyNodeUpdateIsNoOp: a node-update evaluation with every GPU
// healthy stops nothing.
func TestHealthyNodeUpdateIsNoOp(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-a", 4, "", 80))
	process(t, h, h.RegisterJob(schedtest.GPUJob("train", 2, 1)))
	plans := len(h.Plans())
	process(t, h, h.NewEval(h.Job(ns, "train"), structs.EvalTriggerNodeUpdate))
	if got := len(h.Plans()); got != plans {
		t.Errorf("plans: got %d, want %d (no new plan)", got, plans)
	}
	if got := len(h.LiveAllocs(ns, "train")); got != 2 {
		t.Errorf("live allocs: got %d, want 2", got)
	}
}

// TestUnhealthyGPUNoHealthyLeft: with no healthy GPU left anywhere, the
// allocation is still stopped and its replacement waits blocked.
func TestUnhealthyGPUNoHealthyLeft(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-a", 1, "", 80))
	process(t, h, h.RegisterJob(schedtest.GPUJob("train", 1, 1)))
	orig := onlyAlloc(t, h, "train")
	failGPU(t, h, orig.NodeID, orig.DeviceIDs()[0], "double-bit ECC error")
	process(t, h, h.NewEval(h.Job(ns, "train"), structs.EvalTriggerNodeUpdate))
	if got := len(h.LiveAllocs(ns, "train")); got != 0 {
		t.Errorf("live allocs: got %d, want 0", got)
	}
	if e := lastUpdate(t, h); e.BlockedEval == "" {
		t.Errorf("eval: got no blocked eval, want the replacement blocked")
	}
}

func allocByID(t *testing.T, h *schedtest.Harness, id string) *structs.Allocation {
	t.Helper()
	a, err := h.State.AllocByID(nil, id)
	if err != nil || a == nil {
		t.Fatalf("read alloc %s: %v", id, err)
	}
	return a
}
