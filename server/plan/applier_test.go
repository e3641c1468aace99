package plan

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// storeRaft stands in for Raft and the FSM: it round-trips each message
// through the wire encoding and applies plan results to a real store.
type storeRaft struct {
	mu    sync.Mutex
	store *state.StateStore
	index uint64
	calls int
	evals []*structs.Evaluation // the PreemptionEvals of every request
	// ended are the EvalUpdates the requests carried.
	ended []*structs.Evaluation
	// sizes are the encoded entries' lengths in bytes.
	sizes []int
}

func (r *storeRaft) Apply(t structs.MessageType, msg any) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t != structs.ApplyPlanResultsJobOnceRequestType {
		return 0, fmt.Errorf("message type %d, want %d (the job once)", t, structs.ApplyPlanResultsJobOnceRequestType)
	}
	buf, err := structs.Encode(t, msg)
	if err != nil {
		return 0, err
	}
	var req structs.ApplyPlanResultsRequest
	if err := structs.Decode(buf[1:], &req); err != nil {
		return 0, err
	}
	r.index++
	r.calls++
	r.sizes = append(r.sizes, len(buf))
	r.evals = append(r.evals, req.PreemptionEvals...)
	if req.EvalUpdate != nil {
		r.ended = append(r.ended, req.EvalUpdate)
	}
	return r.index, r.store.Write(r.index, func(tx *state.Txn) error { return tx.UpsertPlanAllocs(&req) })
}

// write applies a setup change at the next index.
func (r *storeRaft) write(t *testing.T, fn func(index uint64) error) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.index++
	if err := fn(r.index); err != nil {
		t.Fatal(err)
	}
}

type harness struct {
	raft    *storeRaft
	applier *Applier
	job     *structs.Job
}

func newHarness(t *testing.T, nodes ...*structs.Node) *harness {
	t.Helper()
	return newHarnessWith(t, nil, nodes...)
}

// newHarnessWith is newHarness with applier options added.
func newHarnessWith(t *testing.T, opts []Option, nodes ...*structs.Node) *harness {
	t.Helper()
	store, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{raft: &storeRaft{store: store}}
	h.job = &structs.Job{ID: "train", Type: structs.JobTypeBatch, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec"}}}}}
	h.job.Canonicalize()
	h.raft.write(t, func(i uint64) error { return store.UpsertJob(i, h.job) })
	for _, n := range nodes {
		h.raft.write(t, func(i uint64) error { return store.UpsertNode(i, n) })
	}
	now := time.Unix(1700000000, 0)
	h.applier = NewApplier(h.raft, store, nil, append([]Option{WithNow(func() time.Time { return now })}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.applier.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h
}

// gpuNode has 4000 MHz, 8 GiB and GPUs gpu-<name>-0..count-1; the ones
// listed in unhealthy are marked unhealthy.
func gpuNode(name string, count int, unhealthy ...int) *structs.Node {
	var inst []*structs.NodeDevice
	for i := range count {
		inst = append(inst, &structs.NodeDevice{ID: gpuID(name, i), Healthy: !slices.Contains(unhealthy, i)})
	}
	return &structs.Node{
		ID: name, Name: name, Datacenter: "dc1", Status: structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		NodeResources: &structs.NodeResources{
			Cpu:     structs.NodeCpuResources{CpuShares: 4000},
			Memory:  structs.NodeMemoryResources{MemoryMB: 8192},
			Devices: []*structs.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", Instances: inst}},
		},
	}
}

func gpuID(node string, i int) string { return fmt.Sprintf("GPU-%s-%d", node, i) }

func (h *harness) alloc(id, node string, cpu int64, gpus ...string) *structs.Allocation {
	res := &structs.AllocatedTaskResources{
		Cpu:    structs.AllocatedCpuResources{CpuShares: cpu},
		Memory: structs.AllocatedMemoryResources{MemoryMB: 256},
	}
	if len(gpus) > 0 {
		res.Devices = []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: gpus}}
	}
	return &structs.Allocation{
		ID: id, Namespace: h.job.Namespace, JobID: h.job.ID, TaskGroup: "g", Name: id,
		NodeID: node, DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{"t": res}},
	}
}

func (h *harness) submit(t *testing.T, p *structs.Plan) *structs.PlanResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.Job = h.job
	res, err := h.applier.Submit(ctx, p)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return res
}

func placements(allocs ...*structs.Allocation) map[string][]*structs.Allocation {
	m := map[string][]*structs.Allocation{}
	for _, a := range allocs {
		m[a.NodeID] = append(m[a.NodeID], a)
	}
	return m
}

func stop(a *structs.Allocation) *structs.Allocation {
	c := a.Copy()
	c.DesiredStatus = structs.AllocDesiredStatusStop
	return c
}

func TestApplier_Recheck(t *testing.T) {
	h0 := &harness{job: &structs.Job{ID: "train", Namespace: structs.DefaultNamespace}}
	down := gpuNode("down", 2)
	down.Status = structs.NodeStatusDown
	drained := gpuNode("drained", 2)
	drained.Drain = true
	tests := []struct {
		name         string
		nodes        []*structs.Node
		existing     []*structs.Allocation
		stops        []*structs.Allocation
		place        []*structs.Allocation
		wantAccepted []string // alloc IDs committed
		wantRejected []string
	}{
		{
			name:         "fits",
			nodes:        []*structs.Node{gpuNode("n1", 4)},
			place:        []*structs.Allocation{h0.alloc("a", "n1", 1000, gpuID("n1", 0), gpuID("n1", 1))},
			wantAccepted: []string{"a"},
		},
		{
			name:         "cpu overflow",
			nodes:        []*structs.Node{gpuNode("n1", 4)},
			existing:     []*structs.Allocation{h0.alloc("old", "n1", 3000)},
			place:        []*structs.Allocation{h0.alloc("a", "n1", 1500)},
			wantRejected: []string{"n1"},
		},
		{
			name:         "gpu already held by a running alloc",
			nodes:        []*structs.Node{gpuNode("n1", 4)},
			existing:     []*structs.Allocation{h0.alloc("old", "n1", 100, gpuID("n1", 2))},
			place:        []*structs.Allocation{h0.alloc("a", "n1", 100, gpuID("n1", 1), gpuID("n1", 2))},
			wantRejected: []string{"n1"},
		},
		{
			name:         "stop and placement on the same node net out",
			nodes:        []*structs.Node{gpuNode("n1", 4)},
			existing:     []*structs.Allocation{h0.alloc("old", "n1", 3000, gpuID("n1", 0))},
			stops:        []*structs.Allocation{stop(h0.alloc("old", "n1", 3000, gpuID("n1", 0)))},
			place:        []*structs.Allocation{h0.alloc("a", "n1", 3000, gpuID("n1", 0))},
			wantAccepted: []string{"a", "old"},
		},
		{
			name:         "unhealthy gpu rejected for a new placement",
			nodes:        []*structs.Node{gpuNode("n1", 4, 3)},
			place:        []*structs.Allocation{h0.alloc("a", "n1", 100, gpuID("n1", 3))},
			wantRejected: []string{"n1"},
		},
		{
			name:         "alloc keeps a gpu that failed under it",
			nodes:        []*structs.Node{gpuNode("n1", 4, 3)},
			existing:     []*structs.Allocation{h0.alloc("a", "n1", 100, gpuID("n1", 3))},
			place:        []*structs.Allocation{h0.alloc("a", "n1", 200, gpuID("n1", 3))},
			wantAccepted: []string{"a"},
		},
		{
			name:         "gpu not on the node",
			nodes:        []*structs.Node{gpuNode("n1", 2)},
			place:        []*structs.Allocation{h0.alloc("a", "n1", 100, gpuID("n2", 0))},
			wantRejected: []string{"n1"},
		},
		{
			name:         "placement on a down node rejected, stop allowed",
			nodes:        []*structs.Node{down},
			existing:     []*structs.Allocation{h0.alloc("old", "down", 100)},
			stops:        []*structs.Allocation{stop(h0.alloc("old", "down", 100))},
			wantAccepted: []string{"old"},
		},
		{
			name:         "placement on a draining node rejected",
			nodes:        []*structs.Node{drained},
			place:        []*structs.Allocation{h0.alloc("a", "drained", 100)},
			wantRejected: []string{"drained"},
		},
		{
			name:         "unknown node rejected",
			place:        []*structs.Allocation{h0.alloc("a", "ghost", 100)},
			wantRejected: []string{"ghost"},
		},
		{
			name:         "partial commit when one of two nodes fails",
			nodes:        []*structs.Node{gpuNode("n1", 2), gpuNode("n2", 2)},
			place:        []*structs.Allocation{h0.alloc("a", "n1", 1000, gpuID("n1", 0)), h0.alloc("b", "n2", 9000)},
			wantAccepted: []string{"a"},
			wantRejected: []string{"n2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.nodes...)
			if len(tt.existing) > 0 {
				h.raft.write(t, func(i uint64) error { return h.raft.store.UpsertAllocs(i, tt.existing) })
			}
			before := h.raft.index
			res := h.submit(t, &structs.Plan{EvalID: "e1", NodeUpdate: placements(tt.stops...), NodeAllocation: placements(tt.place...)})

			if got := committedIDs(res); !slices.Equal(got, tt.wantAccepted) {
				t.Errorf("committed = %v, want %v", got, tt.wantAccepted)
			}
			if !slices.Equal(res.RejectedNodes, tt.wantRejected) {
				t.Errorf("RejectedNodes = %v, want %v", res.RejectedNodes, tt.wantRejected)
			}
			wantRefresh := uint64(0)
			if len(tt.wantRejected) > 0 {
				wantRefresh = before
			}
			if res.RefreshIndex != wantRefresh {
				t.Errorf("RefreshIndex = %d, want %d", res.RefreshIndex, wantRefresh)
			}
			wantAllocIndex := before
			if len(tt.wantAccepted) > 0 {
				wantAllocIndex = before + 1
			}
			if res.AllocIndex != wantAllocIndex {
				t.Errorf("AllocIndex = %d, want %d", res.AllocIndex, wantAllocIndex)
			}
			for _, id := range tt.wantAccepted {
				a, err := h.raft.store.AllocByID(nil, id)
				if err != nil || a == nil || a.AllocModifyIndex != res.AllocIndex {
					t.Errorf("alloc %s in state = %v (err %v), want committed at %d", id, a, err, res.AllocIndex)
				}
			}
		})
	}
}

func committedIDs(res *structs.PlanResult) []string {
	var ids []string
	for _, m := range []map[string][]*structs.Allocation{res.NodeUpdate, res.NodeAllocation} {
		for _, allocs := range m {
			for _, a := range allocs {
				ids = append(ids, a.ID)
				if a.ModifyTime == 0 || a.CreateTime == 0 {
					ids = append(ids, a.ID+"(unstamped)")
				}
			}
		}
	}
	slices.Sort(ids)
	return ids
}

func TestApplier_SameGPUTwoPlans(t *testing.T) {
	h := newHarness(t, gpuNode("n1", 4), gpuNode("n2", 4))
	ended := func(id string) *structs.Evaluation {
		return &structs.Evaluation{ID: id, Namespace: "default", JobID: "train", Status: structs.EvalStatusComplete}
	}
	first := h.submit(t, &structs.Plan{EvalID: "e1", EvalUpdate: ended("e1"), NodeAllocation: placements(
		h.alloc("a", "n1", 100, gpuID("n1", 0), gpuID("n1", 1)))})
	if first.RefreshIndex != 0 || len(first.NodeAllocation["n1"]) != 1 {
		t.Fatalf("first plan = %+v, want fully committed", first)
	}
	// The second scheduler worked from a snapshot before the first commit.
	second := h.submit(t, &structs.Plan{EvalID: "e2", EvalUpdate: ended("e2"), NodeAllocation: placements(
		h.alloc("b", "n1", 100, gpuID("n1", 1), gpuID("n1", 2)),
		h.alloc("c", "n2", 100, gpuID("n2", 1)))})
	// Only the plan committed whole carries its evaluation's end.
	if !first.EvalUpdated || second.EvalUpdated || len(h.raft.ended) != 1 || h.raft.ended[0].ID != "e1" {
		t.Errorf("eval ends: first %t, second %t, committed %d; want only e1's", first.EvalUpdated, second.EvalUpdated, len(h.raft.ended))
	}
	if !slices.Equal(second.RejectedNodes, []string{"n1"}) {
		t.Errorf("RejectedNodes = %v, want [n1]", second.RejectedNodes)
	}
	if second.RefreshIndex != first.AllocIndex {
		t.Errorf("RefreshIndex = %d, want the first commit's index %d", second.RefreshIndex, first.AllocIndex)
	}
	if got := committedIDs(second); !slices.Equal(got, []string{"c"}) {
		t.Errorf("second committed %v, want [c]", got)
	}
	b, err := h.raft.store.AllocByID(nil, "b")
	if err != nil || b != nil {
		t.Errorf("rejected alloc b in state: %v (err %v)", b, err)
	}
	if got, want := h.applier.Stats(), (Stats{Plans: 2, PartialCommits: 1, RejectedNodes: 1}); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}

func TestApplier_SubmitWithoutRun(t *testing.T) {
	store, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	a := NewApplier(&storeRaft{store: store}, store, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := a.Submit(ctx, &structs.Plan{EvalID: "e"}); err == nil {
		t.Fatal("Submit without a run loop succeeded")
	}
}

func TestApplier_NoOpCommitsNothing(t *testing.T) {
	h := newHarness(t, gpuNode("n1", 1))
	before := h.raft.calls
	res := h.submit(t, &structs.Plan{EvalID: "e"})
	if h.raft.calls != before || res.AllocIndex != h.raft.index {
		t.Errorf("no-op plan: raft calls %d -> %d, AllocIndex %d; want no call and the snapshot index %d",
			before, h.raft.calls, res.AllocIndex, h.raft.index)
	}
}

func TestApplier_AllocMustNameItsPlanNode(t *testing.T) {
	h := newHarness(t, gpuNode("n1", 2), gpuNode("n2", 2))
	h.submit(t, &structs.Plan{EvalID: "e1", NodeAllocation: placements(h.alloc("a", "n2", 3000))})

	// Listed under n1 (where it fits) but naming n2, which has 1000 MHz
	// left: committing it would overcommit n2 unchecked.
	sneaky := h.alloc("b", "n2", 3000)
	res := h.submit(t, &structs.Plan{EvalID: "e2", NodeAllocation: map[string][]*structs.Allocation{"n1": {sneaky}}})
	if !slices.Equal(res.RejectedNodes, []string{"n1"}) {
		t.Errorf("RejectedNodes = %v, want [n1]", res.RejectedNodes)
	}
	if b, _ := h.raft.store.AllocByID(nil, "b"); b != nil {
		t.Errorf("alloc b committed on %s", b.NodeID)
	}
}

func TestApplier_WithCheckKeepsAllAtOnce(t *testing.T) {
	// The check refuses n2 alone; an all-at-once plan then commits
	// nothing, a plain one commits n1.
	refuse := func(st State, p *structs.Plan) ([]Verdict, error) {
		verdicts, err := Evaluate(st, p)
		for i := range verdicts {
			if verdicts[i].NodeID == "n2" {
				verdicts[i].Reason = "refused by the check"
			}
		}
		return verdicts, err
	}
	tests := []struct {
		name      string
		allAtOnce bool
		committed []string
	}{
		{name: "all at once", allAtOnce: true, committed: nil},
		{name: "plain", allAtOnce: false, committed: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessWith(t, []Option{WithCheck(refuse)}, gpuNode("n1", 1), gpuNode("n2", 1))
			res := h.submit(t, &structs.Plan{EvalID: "e", AllAtOnce: tt.allAtOnce,
				NodeAllocation: placements(h.alloc("a", "n1", 1000), h.alloc("b", "n2", 1000))})
			if got := committedIDs(res); !slices.Equal(got, tt.committed) {
				t.Errorf("committed: got %v, want %v", got, tt.committed)
			}
			if res.RefreshIndex == 0 {
				t.Errorf("RefreshIndex: got 0, want the snapshot's index after a refusal")
			}
		})
	}
}
