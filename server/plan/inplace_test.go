package plan

import (
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestApplier_InPlaceUpdate(t *testing.T) {
	h0 := &harness{job: &structs.Job{ID: "train", Namespace: structs.DefaultNamespace}}
	drained := gpuNode("drained", 2)
	drained.Drain = true
	stopped := stop(h0.alloc("a", "n1", 2000))
	moreCPU := h0.alloc("a", "n1", 3000)
	tests := []struct {
		name         string
		nodes        []*structs.Node
		existing     []*structs.Allocation
		inplace      []*structs.Allocation
		place        []*structs.Allocation
		listUnder    string   // node to list inplace under ("": their own)
		wantAccepted []string // alloc IDs committed, in-place ones too
		wantRejected []string
	}{
		{
			name:         "counted once beside a placement",
			nodes:        []*structs.Node{gpuNode("n1", 2)},
			existing:     []*structs.Allocation{h0.alloc("a", "n1", 2000, gpuID("n1", 0))},
			inplace:      []*structs.Allocation{h0.alloc("a", "n1", 2000, gpuID("n1", 0))},
			place:        []*structs.Allocation{h0.alloc("b", "n1", 2000, gpuID("n1", 1))},
			wantAccepted: []string{"a", "b"},
		},
		{
			name:         "needs no ready node",
			nodes:        []*structs.Node{drained},
			existing:     []*structs.Allocation{h0.alloc("a", "drained", 100)},
			inplace:      []*structs.Allocation{h0.alloc("a", "drained", 100)},
			wantAccepted: []string{"a"},
		},
		{
			name:         "stopped since the scheduler read it",
			nodes:        []*structs.Node{gpuNode("n1", 2)},
			existing:     []*structs.Allocation{stopped},
			inplace:      []*structs.Allocation{h0.alloc("a", "n1", 2000)},
			wantRejected: []string{"n1"},
		},
		{
			name:         "not in state",
			nodes:        []*structs.Node{gpuNode("n1", 2)},
			inplace:      []*structs.Allocation{h0.alloc("a", "n1", 100)},
			wantRejected: []string{"n1"},
		},
		{
			name:         "resources changed",
			nodes:        []*structs.Node{gpuNode("n1", 2)},
			existing:     []*structs.Allocation{h0.alloc("a", "n1", 2000)},
			inplace:      []*structs.Allocation{moreCPU},
			wantRejected: []string{"n1"},
		},
		{
			name:         "listed under another node",
			nodes:        []*structs.Node{gpuNode("n1", 2), gpuNode("n2", 2)},
			existing:     []*structs.Allocation{h0.alloc("a", "n2", 100)},
			inplace:      []*structs.Allocation{h0.alloc("a", "n2", 100)},
			listUnder:    "n1",
			wantRejected: []string{"n1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.nodes...)
			if len(tt.existing) > 0 {
				h.raft.write(t, func(i uint64) error { return h.raft.store.UpsertAllocs(i, tt.existing) })
			}
			setup := h.raft.index
			inplace := placements(tt.inplace...)
			if tt.listUnder != "" {
				inplace = map[string][]*structs.Allocation{tt.listUnder: tt.inplace}
			}
			res := h.submit(t, &structs.Plan{EvalID: "e1", NodeInPlaceUpdate: inplace, NodeAllocation: placements(tt.place...)})

			got := committedIDs(res)
			for _, allocs := range res.NodeInPlaceUpdate {
				for _, a := range allocs {
					got = append(got, a.ID)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.wantAccepted) {
				t.Errorf("committed = %v, want %v", got, tt.wantAccepted)
			}
			if !slices.Equal(res.RejectedNodes, tt.wantRejected) {
				t.Errorf("RejectedNodes = %v, want %v", res.RejectedNodes, tt.wantRejected)
			}
			if len(tt.wantRejected) > 0 && len(tt.existing) > 0 {
				a, err := h.raft.store.AllocByID(nil, tt.existing[0].ID)
				if err != nil || a.DesiredStatus != tt.existing[0].DesiredStatus || a.AllocModifyIndex != setup {
					t.Errorf("rejected update changed state: %+v (err %v), want it as written at %d", a, err, setup)
				}
			}
		})
	}
}

// TestApplier_InPlaceKeepsClientFields: the committed allocation has the
// plan's job version and keeps what its client reported and its
// CreateIndex.
func TestApplier_InPlaceKeepsClientFields(t *testing.T) {
	h := newHarness(t, gpuNode("n1", 2))
	old := h.alloc("a", "n1", 1000, gpuID("n1", 0))
	old.ClientStatus = structs.AllocClientStatusRunning
	h.raft.write(t, func(i uint64) error { return h.raft.store.UpsertAllocs(i, []*structs.Allocation{old}) })
	before, err := h.raft.store.AllocByID(nil, "a")
	if err != nil {
		t.Fatal(err)
	}
	next := h.job.Copy()
	next.Version++
	plan := &structs.Plan{EvalID: "e2"}
	stale := before.Copy()
	stale.ClientStatus = structs.AllocClientStatusPending // the scheduler's older read
	plan.AppendInPlaceUpdate(stale, next)

	res := h.submit(t, plan)
	if full, _, _ := res.FullCommit(plan); !full {
		t.Fatalf("result %+v: want a full commit", res)
	}
	got, err := h.raft.store.AllocByID(nil, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Job.Version != next.Version || got.EvalID != "e2" {
		t.Errorf("job version %d, eval %s: want %d, e2", got.Job.Version, got.EvalID, next.Version)
	}
	if got.ClientStatus != structs.AllocClientStatusRunning || got.CreateIndex != before.CreateIndex {
		t.Errorf("client status %s, create index %d: want running, %d", got.ClientStatus, got.CreateIndex, before.CreateIndex)
	}
	if got.AllocModifyIndex != res.AllocIndex {
		t.Errorf("alloc modify index %d, want %d (the client must see the update)", got.AllocModifyIndex, res.AllocIndex)
	}
}
