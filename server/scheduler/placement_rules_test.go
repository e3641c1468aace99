package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// racks builds nodes of 2 GPUs: per rack name, that many nodes, with
// meta.rack set and the datacenter the rack's prefix before the dash.
func racks(h *schedtest.Harness, perRack map[string]int) {
	for rack, n := range perRack {
		for i := range n {
			node := schedtest.Node(fmt.Sprintf("%s-%d", rack, i), 2, "", 80)
			node.Meta = map[string]string{"rack": rack}
			node.Datacenter = rack[:3]
			h.UpsertNode(node)
		}
	}
}

func countBy(h *schedtest.Harness, jobID string, key func(*structs.Node) string) map[string]int {
	out := map[string]int{}
	for _, a := range h.LiveAllocs(ns, jobID) {
		n, err := h.State.NodeByID(nil, a.NodeID)
		if err != nil || n == nil {
			continue
		}
		out[key(n)]++
	}
	return out
}

func TestSpreadTargets(t *testing.T) {
	h := schedtest.NewHarness(t)
	racks(h, map[string]int{"dc1-a": 10, "dc2-b": 10})
	job := schedtest.GPUJob("spread", 10, 1)
	job.Datacenters = []string{"dc1", "dc2"}
	job.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100, SpreadTarget: []*structs.SpreadTarget{
		{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30},
	}}}
	process(t, h, h.RegisterJob(job))
	got := countBy(h, "spread", func(n *structs.Node) string { return n.Datacenter })
	if got["dc1"] != 7 || got["dc2"] != 3 {
		t.Errorf("allocations per datacenter: got %v, want dc1 7, dc2 3", got)
	}
}

func TestDistinctProperty(t *testing.T) {
	h := schedtest.NewHarness(t)
	racks(h, map[string]int{"dc1-a": 3, "dc1-b": 3, "dc1-c": 3})
	job := schedtest.GPUJob("one-per-rack", 4, 1)
	job.Constraints = append(job.Constraints, &structs.Constraint{LTarget: "${meta.rack}", Operand: structs.ConstraintDistinctProperty, RTarget: "1"})
	process(t, h, h.RegisterJob(job))
	got := countBy(h, "one-per-rack", func(n *structs.Node) string { return n.Meta["rack"] })
	if len(got) != 3 || got["dc1-a"] != 1 || got["dc1-b"] != 1 || got["dc1-c"] != 1 {
		t.Errorf("allocations per rack: got %v, want one on each of 3 racks", got)
	}
	if n := len(h.LiveAllocs(ns, "one-per-rack")); n != 3 {
		t.Errorf("placed: got %d, want 3 (a fourth rack does not exist)", n)
	}
}
