package scheduler_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// twoRacks is 4 nodes of 4 GPUs in 2 racks: a1, a2 in r1; b1, b2 in r2.
func twoRacks(t *testing.T) *schedtest.Harness {
	t.Helper()
	h := schedtest.NewHarness(t)
	for _, n := range []struct{ name, rack string }{{"a1", "r1"}, {"a2", "r1"}, {"b1", "r2"}, {"b2", "r2"}} {
		h.UpsertNode(schedtest.InNetwork(schedtest.Node(n.name, 4, "", 80), structs.TopologyRack, n.rack, structs.TopologySpine, "s1"))
	}
	return h
}

// networkGang is a gang of count single-GPU allocations kept within one
// rack in mode.
func networkGang(id string, count int, mode string) *structs.Job {
	job := gangJob(id, count)
	job.TaskGroups[0].Gang.Network = &structs.GangNetwork{Level: structs.TopologyRack, Mode: mode}
	job.Canonicalize()
	return job
}

// pinGPU holds one GPU on the named node.
func pinGPU(t *testing.T, h *schedtest.Harness, id, node string) {
	t.Helper()
	job := schedtest.GPUJob(id, 1, 1)
	job.Constraints = []*structs.Constraint{{LTarget: "${node.unique.name}", Operand: "=", RTarget: node}}
	process(t, h, h.RegisterJob(job))
	if live := h.LiveAllocs(ns, id); len(live) != 1 || live[0].NodeName != node {
		t.Fatalf("filler %s: got %d live allocs, want one on %s", id, len(live), node)
	}
}

// racksOf returns the racks of the job's live allocations, counted.
func racksOf(t *testing.T, h *schedtest.Harness, jobID string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, a := range h.LiveAllocs(ns, jobID) {
		n, err := h.State.NodeByID(nil, a.NodeID)
		if err != nil || n == nil {
			t.Fatalf("node of %s: %v", a.ID, err)
		}
		out[n.TopologyValue(structs.TopologyRack)]++
	}
	return out
}

func TestGangNetworkRequiredLandsInOneRack(t *testing.T) {
	h := twoRacks(t)
	process(t, h, h.RegisterJob(networkGang("ddp", 8, structs.GangNetworkRequired)))
	if got := racksOf(t, h, "ddp"); len(got) != 1 || got["r1"]+got["r2"] != 8 {
		t.Fatalf("racks of the gang: got %v, want all 8 in one rack", got)
	}
}

func TestGangNetworkRequiredWaitsNamingTheLevel(t *testing.T) {
	// One GPU busy in each rack: 7 free in each, 14 in all, and a node of
	// 8 free GPUs that declares no rack; the gang of 8 waits.
	h := twoRacks(t)
	h.UpsertNode(schedtest.Node("loose", 8, "", 80))
	pinGPU(t, h, "f1", "a1")
	pinGPU(t, h, "f2", "b2")

	process(t, h, h.RegisterJob(networkGang("ddp", 8, structs.GangNetworkRequired)))
	if live := h.LiveAllocs(ns, "ddp"); len(live) != 0 {
		t.Fatalf("gang placed %d of 8 with no rack holding 8 free GPUs, want none", len(live))
	}
	e := lastUpdate(t, h)
	m := e.FailedTGAllocs[schedtest.GPUGroup]
	want := "gang network: no rack fits 8 GPUs (best r1: 7 free)"
	if m == nil || !strings.HasPrefix(m.Gang, want) {
		t.Fatalf("failed metric: got %+v, want a reason starting %q", m, want)
	}
	if e.QueuedAllocations[schedtest.GPUGroup] != 8 || e.BlockedEval == "" {
		t.Errorf("eval: queued %d blocked %q, want 8 queued and a blocked eval", e.QueuedAllocations[schedtest.GPUGroup], e.BlockedEval)
	}
	// It waits holding one rack (r1: as free as r2, first by name), not
	// the loose node with the most free GPUs.
	res, err := h.State.ReservationByJob(ns, "ddp")
	want2 := []string{schedtest.NodeID("a1"), schedtest.NodeID("a2")}
	slices.Sort(want2)
	if err != nil || res == nil || !slices.Equal(res.Nodes, want2) {
		t.Errorf("reservation: got %+v (err %v), want nodes a1 and a2 of r1", res, err)
	}

	// r2's busy GPU frees: the blocked eval places the gang in r2.
	h.SetClientStatus(onlyAlloc(t, h, "f2").ID, structs.AllocClientStatusComplete)
	process(t, h, h.Eval(e.BlockedEval))
	if got := racksOf(t, h, "ddp"); got["r2"] != 8 {
		t.Fatalf("racks of the gang after r2 freed: got %v, want 8 in r2", got)
	}
}

func TestGangNetworkPacksTheFullerRack(t *testing.T) {
	tests := []struct {
		name string
		mode string
	}{
		{"required", structs.GangNetworkRequired},
		{"preferred", structs.GangNetworkPreferred},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// r2 holds one busy GPU: the gang of 4 fills r2 rather than
			// opening r1 or spreading.
			h := twoRacks(t)
			pinGPU(t, h, "f1", "b1")
			process(t, h, h.RegisterJob(networkGang("ddp", 4, tt.mode)))
			if got := racksOf(t, h, "ddp"); got["r2"] != 4 {
				t.Fatalf("racks of the gang: got %v, want 4 in r2", got)
			}
		})
	}
}

func TestGangNetworkPreferredFallsBackAcrossRacks(t *testing.T) {
	// No rack holds 8 free GPUs: preferred places the gang anyway, over
	// the two racks and not on the node outside them (the fullest, which
	// bin-packing alone would fill first).
	h := twoRacks(t)
	h.UpsertNode(schedtest.Node("loose", 2, "", 80))
	pinGPU(t, h, "f0", "loose")
	pinGPU(t, h, "f1", "a1")
	pinGPU(t, h, "f2", "b2")
	process(t, h, h.RegisterJob(networkGang("ddp", 8, structs.GangNetworkPreferred)))
	if got := racksOf(t, h, "ddp"); got["r1"]+got["r2"] != 8 {
		t.Fatalf("racks of the gang: got %v, want 8 over r1 and r2", got)
	}
}

func TestGangNetworkKeepsTheMembersRack(t *testing.T) {
	// A lost member is replaced in its gang's rack, even with r1 emptier.
	h := twoRacks(t)
	pinGPU(t, h, "f1", "a1")
	process(t, h, h.RegisterJob(networkGang("ddp", 4, structs.GangNetworkRequired)))
	if got := racksOf(t, h, "ddp"); got["r1"] != 4 {
		t.Fatalf("racks of the gang: got %v, want 4 in r1", got)
	}
	pinGPU(t, h, "f2", "a2")
	pinGPU(t, h, "f3", "a2")
	victim := h.LiveAllocs(ns, "ddp")[0]
	h.SetClientStatus(victim.ID, structs.AllocClientStatusLost)
	process(t, h, h.NewEval(h.Job(ns, "ddp"), structs.EvalTriggerNodeUpdate))
	if got := racksOf(t, h, "ddp"); got["r1"] != 4 {
		t.Fatalf("racks of the gang after a member was lost: got %v, want 4 in r1", got)
	}
}

func TestGangNetworkCountsOnlyNodesTheGangCanUse(t *testing.T) {
	// Both racks have 8 free GPUs, but only r2's nodes are in the pool
	// the job asks for: r2 is chosen, though r1 comes first by name.
	h := schedtest.NewHarness(t)
	for _, n := range []struct{ name, rack, pool string }{{"a1", "r1", "infer"}, {"a2", "r1", "infer"}, {"b1", "r2", "train"}, {"b2", "r2", "train"}} {
		node := schedtest.InNetwork(schedtest.Node(n.name, 4, "", 80), structs.TopologyRack, n.rack)
		node.Meta["pool"] = n.pool
		h.UpsertNode(node)
	}
	job := networkGang("ddp", 8, structs.GangNetworkRequired)
	job.Constraints = []*structs.Constraint{{LTarget: "${meta.pool}", Operand: "=", RTarget: "train"}}
	process(t, h, h.RegisterJob(job))
	if got := racksOf(t, h, "ddp"); got["r2"] != 8 {
		t.Fatalf("racks of the gang: got %v, want 8 in r2", got)
	}
}

func TestGangNetworkReplacementWhenTheRackIsFull(t *testing.T) {
	tests := []struct {
		mode      string
		wantRacks map[string]int
		wantWhy   string
	}{
		{structs.GangNetworkRequired, map[string]int{"r1": 3}, "gang network: rack r1, where its members run, does not fit 1 GPU (0 free)"},
		{structs.GangNetworkPreferred, map[string]int{"r1": 3, "r2": 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			// a1 is full: the gang of 4 fills a2 (r1, the fuller rack).
			h := twoRacks(t)
			for _, id := range []string{"f1", "f2", "f3", "f4"} {
				pinGPU(t, h, id, "a1")
			}
			process(t, h, h.RegisterJob(networkGang("ddp", 4, tt.mode)))
			if got := racksOf(t, h, "ddp"); got["r1"] != 4 {
				t.Fatalf("racks of the gang: got %v, want 4 in r1", got)
			}
			// A member is lost and another job takes its GPU: r1 is full.
			h.SetClientStatus(h.LiveAllocs(ns, "ddp")[0].ID, structs.AllocClientStatusLost)
			pinGPU(t, h, "f5", "a2")
			process(t, h, h.NewEval(h.Job(ns, "ddp"), structs.EvalTriggerNodeUpdate))
			if got := racksOf(t, h, "ddp"); !maps.Equal(got, tt.wantRacks) {
				t.Errorf("racks of the gang: got %v, want %v", got, tt.wantRacks)
			}
			if tt.wantWhy == "" {
				return
			}
			m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]
			if m == nil || !strings.HasPrefix(m.Gang, tt.wantWhy) {
				t.Errorf("failed metric: got %+v, want a reason starting %q", m, tt.wantWhy)
			}
		})
	}
}
