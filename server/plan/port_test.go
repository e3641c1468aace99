package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// withPorts gives a its host ports, one label per port.
func withPorts(a *structs.Allocation, ports ...int) *structs.Allocation {
	for _, p := range ports {
		a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports,
			structs.AllocatedPortMapping{Label: "p" + strings.Repeat("x", len(a.AllocatedResources.Shared.Ports)), Value: p, HostIP: "10.0.0.1"})
	}
	return a
}

// TestApplier_PortHeldTwice: a plan made from a snapshot before another
// plan took a port on the node loses that node; a plan that takes a
// port the node reserves loses it too; a port freed by a stop in the
// same plan may be taken.
func TestApplier_PortHeldTwice(t *testing.T) {
	n1 := gpuNode("n1", 1)
	n1.ReservedResources = &structs.NodeReservedResources{Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22,8500-8600"}}
	h := newHarness(t, n1, gpuNode("n2", 1))

	first := h.submit(t, &structs.Plan{EvalID: "e1", NodeAllocation: placements(withPorts(h.alloc("a", "n1", 100), 20001, 8080))})
	if first.RefreshIndex != 0 {
		t.Fatalf("first plan = %+v, want committed", first)
	}
	tests := []struct {
		name   string
		plan   *structs.Plan
		reason string // "" commits
	}{
		{
			name:   "dynamic port taken",
			plan:   &structs.Plan{EvalID: "e2", NodeAllocation: placements(withPorts(h.alloc("b", "n1", 100), 20002, 20001))},
			reason: "does not fit: port 20001 in use",
		},
		{
			name:   "reserved port",
			plan:   &structs.Plan{EvalID: "e3", NodeAllocation: placements(withPorts(h.alloc("c", "n1", 100), 8555))},
			reason: "does not fit: port 8555 in use",
		},
		{
			name:   "two placements of one plan on one port",
			plan:   &structs.Plan{EvalID: "e4", NodeAllocation: placements(withPorts(h.alloc("d", "n1", 100), 9000), withPorts(h.alloc("e", "n1", 100), 9000))},
			reason: "does not fit: port 9000 in use",
		},
		{
			name: "port freed by a stop in the plan",
			plan: &structs.Plan{EvalID: "e5",
				NodeUpdate:     placements(stop(h.alloc("a", "n1", 100))),
				NodeAllocation: placements(withPorts(h.alloc("f", "n1", 100), 8080))},
		},
		{
			name: "same port on another node",
			plan: &structs.Plan{EvalID: "e6", NodeAllocation: placements(withPorts(h.alloc("g", "n2", 100), 8080))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdicts, err := Evaluate(mustSnapshot(t, h), withJob(tt.plan, h.job))
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			var reasons []string
			for _, v := range verdicts {
				if v.Reason != "" {
					reasons = append(reasons, v.Reason)
				}
			}
			want := []string{}
			if tt.reason != "" {
				want = []string{tt.reason}
			}
			if !slices.Equal(append([]string{}, reasons...), want) {
				t.Errorf("refusals: got %q, want %q", reasons, want)
			}
		})
	}
	// Through the applier: the colliding plan is refused and not stored.
	res := h.submit(t, &structs.Plan{EvalID: "e7", NodeAllocation: placements(withPorts(h.alloc("h", "n1", 100), 20001))})
	if !slices.Equal(res.RejectedNodes, []string{"n1"}) {
		t.Errorf("RejectedNodes = %v, want [n1]", res.RejectedNodes)
	}
	if a, err := h.raft.store.AllocByID(nil, "h"); err != nil || a != nil {
		t.Errorf("refused alloc h in state: %v (err %v)", a, err)
	}
}

func withJob(p *structs.Plan, job *structs.Job) *structs.Plan {
	p.Job = job
	return p
}

func mustSnapshot(t *testing.T, h *harness) State {
	t.Helper()
	snap, err := h.raft.store.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return snap
}
