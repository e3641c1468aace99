package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestApplier_ConcurrentPlansForOneGPU submits, at once, plans that were
// all built from the same state and all take GPU 0 of n1 (each with a
// GPU of n2 no one else wants). Exactly one may have GPU 0; every other
// plan loses n1 with a RefreshIndex at the winner's commit, keeps its n2
// part, and is counted as a partial commit.
func TestApplier_ConcurrentPlansForOneGPU(t *testing.T) {
	const workers = 4
	h := newHarness(t, gpuNode("n1", 4), gpuNode("n2", workers))
	snapIndex := h.raft.index
	results := make([]*structs.PlanResult, workers)
	errs := make([]error, workers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			p := &structs.Plan{EvalID: fmt.Sprintf("e%d", i), Job: h.job, SnapshotIndex: snapIndex, NodeAllocation: placements(
				h.alloc(fmt.Sprintf("a%d", i), "n1", 100, gpuID("n1", 0)),
				h.alloc(fmt.Sprintf("b%d", i), "n2", 100, gpuID("n2", i)))}
			results[i], errs[i] = h.applier.Submit(ctx, p)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Submit: %v", err)
	}

	var winners []int
	for i, res := range results {
		if len(res.RejectedNodes) == 0 {
			winners = append(winners, i)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("plans fully committed = %v, want exactly one", winners)
	}
	winIndex := results[winners[0]].AllocIndex
	for i, res := range results {
		if i == winners[0] {
			continue
		}
		if !slices.Equal(res.RejectedNodes, []string{"n1"}) {
			t.Errorf("plan %d RejectedNodes = %v, want [n1]", i, res.RejectedNodes)
		}
		if res.RefreshIndex < winIndex {
			t.Errorf("plan %d RefreshIndex = %d, want >= the winner's commit %d", i, res.RefreshIndex, winIndex)
		}
		if got, want := committedIDs(res), []string{fmt.Sprintf("b%d", i)}; !slices.Equal(got, want) {
			t.Errorf("plan %d committed %v, want %v", i, got, want)
		}
	}
	if got := holders(t, h, "n1", gpuID("n1", 0)); len(got) != 1 {
		t.Errorf("allocs holding %s = %v, want exactly one", gpuID("n1", 0), got)
	}
	want := Stats{Plans: workers, PartialCommits: workers - 1, RejectedNodes: workers - 1}
	if got := h.applier.Stats(); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}

// TestApplier_StatsCountRejections checks the counters plan by plan.
func TestApplier_StatsCountRejections(t *testing.T) {
	h := newHarness(t, gpuNode("n1", 2), gpuNode("n2", 2))
	steps := []struct {
		name  string
		place []*structs.Allocation
		want  Stats
	}{
		{"fits", []*structs.Allocation{h.alloc("a", "n1", 100, gpuID("n1", 0))}, Stats{Plans: 1}},
		{"both nodes taken", []*structs.Allocation{h.alloc("b", "n1", 100, gpuID("n1", 0)), h.alloc("c", "n2", 9000)},
			Stats{Plans: 2, PartialCommits: 1, RejectedNodes: 2}},
		{"one node taken", []*structs.Allocation{h.alloc("d", "n1", 100, gpuID("n1", 0)), h.alloc("e", "n2", 100)},
			Stats{Plans: 3, PartialCommits: 2, RejectedNodes: 3}},
		{"empty plan", nil, Stats{Plans: 4, PartialCommits: 2, RejectedNodes: 3}},
	}
	for _, tt := range steps {
		h.submit(t, &structs.Plan{EvalID: tt.name, NodeAllocation: placements(tt.place...)})
		if got := h.applier.Stats(); got != tt.want {
			t.Errorf("after %q: Stats = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// holders returns the IDs of the live allocations on node holding gpu.
func holders(t *testing.T, h *harness, node, gpu string) []string {
	t.Helper()
	allocs, err := h.raft.store.AllocsByNode(nil, node)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range allocs {
		if !a.TerminalStatus() && slices.Contains(a.DeviceIDs(), gpu) {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

// TestApplier_ConcurrentSlicesOfOneGPU submits at once plans that each
// take a 30% compute slice of the same GPU: three fit in one instance, so
// exactly three commit and the others are rejected for the node; the
// slices held never sum past 100%.
func TestApplier_ConcurrentSlicesOfOneGPU(t *testing.T) {
	const plans, fit = 5, 3
	h := newHarness(t, gpuNode("n1", 1))
	gpu := gpuID("n1", 0)
	results := make([]*structs.PlanResult, plans)
	errs := make([]error, plans)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range plans {
		wg.Go(func() {
			results[i], errs[i] = h.applier.Submit(ctx, &structs.Plan{EvalID: fmt.Sprintf("e%d", i), Job: h.job,
				NodeAllocation: placements(slice(h.alloc(fmt.Sprintf("s%d", i), "n1", 100, gpu), 30))})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	committed := 0
	for i, res := range results {
		switch {
		case len(res.RejectedNodes) == 0:
			committed++
		case !slices.Equal(res.RejectedNodes, []string{"n1"}) || res.RefreshIndex == 0:
			t.Errorf("plan %d: RejectedNodes %v, RefreshIndex %d; want [n1] and a refresh index", i, res.RejectedNodes, res.RefreshIndex)
		}
	}
	if committed != fit {
		t.Errorf("plans committed = %d, want %d (3 x 30%% of one GPU)", committed, fit)
	}
	allocs, err := h.raft.store.AllocsByNode(nil, "n1")
	if err != nil {
		t.Fatal(err)
	}
	compute := 0
	for _, a := range allocs {
		for _, d := range a.AllocatedResources.Tasks["t"].Devices {
			compute += d.Compute
		}
	}
	if compute != fit*30 {
		t.Errorf("compute held on %s = %d%%, want %d%%", gpu, compute, fit*30)
	}
}

// slice makes a hold a compute percent slice of its GPUs.
func slice(a *structs.Allocation, compute int) *structs.Allocation {
	for _, d := range a.AllocatedResources.Tasks["t"].Devices {
		d.Compute = compute
	}
	return a
}
