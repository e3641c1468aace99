package plan

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestApplier_AllAtOnce: two plans race for GPU 0 of n1; the loser is
// all at once (a gang), so its n2 part, which fits, is refused too and
// nothing of it commits.
func TestApplier_AllAtOnce(t *testing.T) {
	h := newHarness(t, gpuNode("n1", 2), gpuNode("n2", 2))
	snapIndex := h.raft.index
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first := &structs.Plan{EvalID: "e1", Job: h.job, SnapshotIndex: snapIndex,
		NodeAllocation: placements(h.alloc("a1", "n1", 100, gpuID("n1", 0)))}
	if res, err := h.applier.Submit(ctx, first); err != nil || len(res.RejectedNodes) != 0 {
		t.Fatalf("first plan: %+v, %v; want committed", res, err)
	}
	gang := &structs.Plan{EvalID: "e2", Job: h.job, SnapshotIndex: snapIndex, AllAtOnce: true,
		NodeAllocation: placements(h.alloc("g1", "n1", 100, gpuID("n1", 0)), h.alloc("g2", "n2", 100, gpuID("n2", 0)))}
	res, err := h.applier.Submit(ctx, gang)
	if err != nil {
		t.Fatalf("gang plan: %v", err)
	}
	if len(res.RejectedNodes) != 2 || res.RefreshIndex == 0 {
		t.Errorf("gang plan: rejected %v refresh %d, want both nodes and a refresh index", res.RejectedNodes, res.RefreshIndex)
	}
	if got := committedIDs(res); len(got) != 0 {
		t.Errorf("gang plan committed %v, want nothing", got)
	}
	if got := holders(t, h, "n2", gpuID("n2", 0)); len(got) != 0 {
		t.Errorf("allocs holding %s = %v, want none", gpuID("n2", 0), got)
	}

	snap, err := h.raft.store.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	verdicts, err := Evaluate(snap, gang)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if len(verdicts) != 2 || verdicts[0].Reason == "" {
		t.Fatalf("verdicts: %+v, want n1 and n2, n1 refused", verdicts)
	}
	if !strings.Contains(verdicts[1].Reason, "plan is all at once and node n1 was refused") {
		t.Errorf("n2 verdict: %q, want it to name n1's refusal", verdicts[1].Reason)
	}
}
