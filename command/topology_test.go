package command

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestNodeStatusTopology: node status shows the node's place in the
// network, closest level first, and its topology.* attributes.
func TestNodeStatusTopology(t *testing.T) {
	n := testNode()
	n.Attributes["topology.rack"] = "r12"
	n.Attributes["topology.block"] = "nvl72-07"
	out := formatNode(testNow, n, nil, false)
	for _, want := range []string{"Topology       = block nvl72-07, rack r12", "topology.rack"} {
		if !strings.Contains(out, want) {
			t.Errorf("node status = %q, want it to contain %q", out, want)
		}
	}
}

// TestJobPlanGangNetworkGolden: a gang that fits in no rack says so in
// the dry run, naming the level and the best domain.
func TestJobPlanGangNetworkGolden(t *testing.T) {
	resp := &structs.JobPlanResponse{
		JobModifyIndex: 3,
		Diff:           &structs.JobDiff{Type: structs.DiffTypeAdded, ID: "ddp"},
		Annotations: &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{
			"worker": {},
		}},
		FailedTGAllocs: map[string]*structs.AllocMetric{"worker": {
			Gang:              `gang network: no rack fits 8 GPUs (best r1: 7 free); gang "worker": group "worker" would have 0 of the 8 allocations it needs together; nothing of the gang is placed until all fit`,
			CoalescedFailures: 7,
		}},
	}
	golden(t, "job_plan_gang_network", formatPlan("ddp", resp, nil, false))
}
