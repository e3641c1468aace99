package plan

import (
	"context"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestApplier_PreemptionEvals: a plan that preempts two allocations of
// one job (and stops another of its own) commits with one evaluation for
// the preempted job, so it is replaced when there is room.
func TestApplier_PreemptionEvals(t *testing.T) {
	h := newHarness(t, gpuNode("n1", 2))
	victims := []*structs.Allocation{h.alloc("v1", "n1", 100, gpuID("n1", 0)), h.alloc("v2", "n1", 100, gpuID("n1", 1))}
	for _, v := range victims {
		v.Job = h.job
	}
	h.raft.write(t, func(i uint64) error { return h.raft.store.UpsertAllocs(i, victims) })

	high := h.job.Copy()
	high.ID, high.Priority = "high", 80
	by := h.alloc("p1", "n1", 100, gpuID("n1", 0), gpuID("n1", 1))
	by.JobID, by.Job = high.ID, high
	p := &structs.Plan{EvalID: "e1", Job: high, SnapshotIndex: h.raft.index, NodeAllocation: placements(by)}
	for _, v := range victims {
		p.AppendPreemptedAlloc(v, by)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := h.applier.Submit(ctx, p)
	if err != nil || len(res.RejectedNodes) != 0 {
		t.Fatalf("submit: %+v, %v; want committed", res, err)
	}
	if len(h.raft.evals) != 1 {
		t.Fatalf("preemption evals: got %d, want 1 for job %s", len(h.raft.evals), h.job.ID)
	}
	e := h.raft.evals[0]
	if e.JobID != h.job.ID || e.TriggeredBy != structs.EvalTriggerPreemption || e.Status != structs.EvalStatusPending {
		t.Errorf("eval: job %s trigger %s status %s, want %s preemption pending", e.JobID, e.TriggeredBy, e.Status, h.job.ID)
	}
	for _, id := range []string{"v1", "v2"} {
		a, err := h.raft.store.AllocByID(nil, id)
		if err != nil || a == nil || a.DesiredStatus != structs.AllocDesiredStatusStop || a.PreemptedByAllocation != "p1" {
			t.Errorf("victim %s: %+v (err %v), want stopped, preempted by p1", id, a, err)
		}
	}
}
