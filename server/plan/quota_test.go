package plan

import (
	"slices"
	"sync"
	"testing"

	"github.com/droverhq/drover/structs"
)

// quotaHarness is a harness whose job runs in namespace team-a under
// quota "q" of gpus GPUs, with the allocations in live already running.
func quotaHarness(t *testing.T, gpus int64, live ...string) *harness {
	t.Helper()
	h := newHarness(t, gpuNode("n1", 4), gpuNode("n2", 4), gpuNode("n3", 4))
	store := h.raft.store
	q := &structs.QuotaSpec{Name: "q", Limits: []*structs.QuotaLimit{{Region: "global", RegionLimit: &structs.RegionLimit{GPUs: gpus}}}}
	h.raft.write(t, func(i uint64) error { return store.UpsertQuotaSpecs(i, []*structs.QuotaSpec{q}) })
	h.raft.write(t, func(i uint64) error {
		return store.UpsertNamespaces(i, []*structs.Namespace{{Name: "team-a", Quota: "q"}})
	})
	job := h.job.Copy()
	job.Namespace = "team-a"
	h.raft.write(t, func(i uint64) error { return store.UpsertJob(i, job) })
	h.job = job
	var allocs []*structs.Allocation
	for i, node := range live {
		allocs = append(allocs, h.alloc("live-"+node, node, 100, gpuID(node, i)))
	}
	h.raft.write(t, func(i uint64) error { return store.UpsertAllocs(i, allocs) })
	return h
}

func TestEvaluateQuota(t *testing.T) {
	h0 := &harness{job: &structs.Job{ID: "train", Namespace: "team-a"}}
	tests := []struct {
		name   string
		gpus   int64
		live   []string // nodes with a running 1-GPU allocation
		stops  []*structs.Allocation
		place  []*structs.Allocation
		reason map[string]string // node -> rejection, "" when accepted
	}{
		{
			name: "last GPU taken", gpus: 2, live: []string{"n1", "n2"},
			place:  []*structs.Allocation{h0.alloc("a", "n3", 100, gpuID("n3", 3))},
			reason: map[string]string{"n3": `quota "q" exhausted: gpu 2 of 2 used, need 1`},
		},
		{
			name: "room for one of two nodes", gpus: 2, live: []string{"n1"},
			place: []*structs.Allocation{
				h0.alloc("a", "n2", 100, gpuID("n2", 3)), h0.alloc("b", "n3", 100, gpuID("n3", 3)),
			},
			reason: map[string]string{"n2": "", "n3": `quota "q" exhausted: gpu 2 of 2 used, need 1`},
		},
		{
			name: "a stop on another node makes room", gpus: 2, live: []string{"n1", "n3"},
			stops:  []*structs.Allocation{stop(h0.alloc("live-n3", "n3", 100, gpuID("n3", 1)))},
			place:  []*structs.Allocation{h0.alloc("a", "n2", 100, gpuID("n2", 3))},
			reason: map[string]string{"n2": "", "n3": ""},
		},
		{
			name: "an allocation already live is not counted again", gpus: 2, live: []string{"n1", "n2"},
			place:  []*structs.Allocation{h0.alloc("live-n2", "n2", 100, gpuID("n2", 1))},
			reason: map[string]string{"n2": ""},
		},
		{
			name: "none allowed", gpus: -1,
			place:  []*structs.Allocation{h0.alloc("a", "n1", 100, gpuID("n1", 0))},
			reason: map[string]string{"n1": `quota "q" exhausted: gpu none allowed, need 1`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := quotaHarness(t, tt.gpus, tt.live...)
			snap, err := h.raft.store.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			plan := &structs.Plan{EvalID: "e", Job: h.job, NodeAllocation: placements(tt.place...), NodeUpdate: placements(tt.stops...)}
			verdicts, err := Evaluate(snap, plan)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, v := range verdicts {
				got[v.NodeID] = v.Reason
			}
			for node, want := range tt.reason {
				if got[node] != want {
					t.Errorf("node %s: got reason %q, want %q", node, got[node], want)
				}
			}
		})
	}
}

// TestApplierQuotaRace: two schedulers, each from a snapshot with one GPU
// of the quota left, submit a placement at once; the applier commits one
// and rejects the other, so the quota is never exceeded.
func TestApplierQuotaRace(t *testing.T) {
	h := quotaHarness(t, 2, "n1")
	plans := []*structs.Plan{
		{EvalID: "e1", NodeAllocation: placements(h.alloc("a", "n2", 100, gpuID("n2", 0)))},
		{EvalID: "e2", NodeAllocation: placements(h.alloc("b", "n3", 100, gpuID("n3", 0)))},
	}
	results := make([]*structs.PlanResult, len(plans))
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.submit(t, p)
		}()
	}
	wg.Wait()

	var committed, rejected []string
	for _, r := range results {
		committed = append(committed, committedIDs(r)...)
		rejected = append(rejected, r.RejectedNodes...)
		if len(r.RejectedNodes) > 0 && r.RefreshIndex == 0 {
			t.Errorf("a rejected plan got no RefreshIndex: %+v", r)
		}
	}
	if len(committed) != 1 || len(rejected) != 1 {
		t.Fatalf("committed %v, rejected nodes %v; want one each", committed, rejected)
	}
	usage, err := h.raft.store.QuotaUsage(nil, "q")
	if err != nil {
		t.Fatal(err)
	}
	if usage.Used.GPUCompute != 2*structs.WholeGPU {
		t.Errorf("quota usage = %s GPUs, want 2", structs.FormatGPUs(usage.Used.GPUCompute))
	}
	if slices.Contains(committed, "a") == slices.Contains(committed, "b") {
		t.Errorf("committed %v, want exactly one of a and b", committed)
	}
}
