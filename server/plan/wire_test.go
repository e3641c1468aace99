package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// bigJob stores a new version of h's job, padded with meta to about size
// bytes, and makes it the job h submits plans for.
func (h *harness) bigJob(t *testing.T, size int) *structs.Job {
	t.Helper()
	j := h.job.Copy()
	j.Meta = map[string]string{}
	for i := 0; i < size/1024; i++ {
		j.Meta[fmt.Sprintf("k%04d", i)] = strings.Repeat("x", 1024)
	}
	h.raft.write(t, func(i uint64) error { return h.raft.store.UpsertJob(i, j) })
	stored, err := h.raft.store.JobByID(nil, j.Namespace, j.ID)
	if err != nil || stored == nil {
		t.Fatalf("job: %v", err)
	}
	h.job = stored
	return stored
}

// placeMany returns count placements of job spread over nodes, each with
// its own decoded copy of job, as a plan from a follower's RPC has.
func (h *harness) placeMany(t *testing.T, job *structs.Job, count int, nodes ...string) *structs.Plan {
	t.Helper()
	p := &structs.Plan{EvalID: "e1", Job: job, SnapshotIndex: h.raft.index, NodeAllocation: map[string][]*structs.Allocation{}}
	for i := range count {
		a := h.alloc(fmt.Sprintf("a%02d", i), nodes[i%len(nodes)], 10)
		a.Job = roundTrip(t, job)
		p.AppendAlloc(a)
	}
	return p
}

func roundTrip(t *testing.T, job *structs.Job) *structs.Job {
	t.Helper()
	buf, err := structs.Encode(0, job)
	if err != nil {
		t.Fatal(err)
	}
	var out structs.Job
	if err := structs.Decode(buf[1:], &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestApplier_EntryCarriesJobOnce: a plan placing 50 allocations of a
// 500 KB job commits an entry of about one job, not fifty, and every
// allocation in state still has the job.
func TestApplier_EntryCarriesJobOnce(t *testing.T) {
	const jobSize, count = 500 << 10, 50
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	var ns []*structs.Node
	for _, n := range nodes {
		ns = append(ns, gpuNode(n, 0))
	}
	h := newHarness(t, ns...)
	job := h.bigJob(t, jobSize)
	p := h.placeMany(t, job, count, nodes...)

	// What the applier wrote before: every allocation with its job.
	var old []*structs.Allocation
	for _, from := range p.NodeAllocation {
		old = append(old, from...)
	}
	oldBuf, err := structs.Encode(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Allocs: old, EvalID: p.EvalID})
	if err != nil {
		t.Fatal(err)
	}

	h.submit(t, p)
	if len(h.raft.sizes) != 1 {
		t.Fatalf("entries: got %d, want 1", len(h.raft.sizes))
	}
	got := h.raft.sizes[0]
	t.Logf("job %d bytes, count %d: entry %d bytes, was %d bytes (%.1fx smaller)",
		jobSize, count, got, len(oldBuf), float64(len(oldBuf))/float64(got))
	if got > 2*jobSize {
		t.Errorf("entry: got %d bytes, want under %d (the job once)", got, 2*jobSize)
	}
	allocs, err := h.raft.store.AllocsByJob(nil, job.Namespace, job.ID)
	if err != nil || len(allocs) != count {
		t.Fatalf("allocs: got %d (%v), want %d", len(allocs), err, count)
	}
	for _, a := range allocs {
		if a.Job == nil || a.Job.Version != job.Version || len(a.Job.Meta) != len(job.Meta) {
			t.Fatalf("alloc %s: job %s, want version %d with its meta", a.ID, jobVersion(a.Job), job.Version)
		}
	}
}

// TestApplier_JobsOnTheWire: stops carry no job and keep the one they
// ran; placements and in-place updates take the plan's job; a
// preempted allocation keeps its own job.
func TestApplier_JobsOnTheWire(t *testing.T) {
	const jobSize = 100 << 10
	h := newHarness(t, gpuNode("n1", 0))
	other := h.job.Copy()
	other.ID, other.Priority = "other", 10
	h.raft.write(t, func(i uint64) error { return h.raft.store.UpsertJob(i, other) })
	v0 := h.bigJob(t, jobSize)
	old, moved, victim := h.alloc("old", "n1", 10), h.alloc("moved", "n1", 10), h.alloc("victim", "n1", 10)
	old.Job, moved.Job = v0, v0
	victim.JobID, victim.Job = other.ID, other
	h.raft.write(t, func(i uint64) error {
		return h.raft.store.UpsertAllocs(i, []*structs.Allocation{old, moved, victim})
	})
	v1 := h.bigJob(t, jobSize)

	t.Run("a plan that only stops writes no job", func(t *testing.T) {
		p := &structs.Plan{EvalID: "e1", Job: v1, SnapshotIndex: h.raft.index}
		p.AppendStoppedAlloc(old, "updated", "")
		h.submit(t, p)
		if got := h.raft.sizes[len(h.raft.sizes)-1]; got > jobSize/10 {
			t.Errorf("entry: got %d bytes, want no job in it (job is %d)", got, jobSize)
		}
		a, _ := h.raft.store.AllocByID(nil, "old")
		if a.DesiredStatus != structs.AllocDesiredStatusStop || jobVersion(a.Job) != jobVersion(v0) {
			t.Errorf("stopped alloc: desired %s job %s, want stop keeping %s", a.DesiredStatus, jobVersion(a.Job), jobVersion(v0))
		}
	})
	t.Run("in place and preempted", func(t *testing.T) {
		p := &structs.Plan{EvalID: "e2", Job: v1, SnapshotIndex: h.raft.index}
		p.AppendInPlaceUpdate(moved, roundTrip(t, v1))
		placed := h.alloc("new", "n1", 10)
		placed.Job = v1
		p.AppendAlloc(placed)
		p.AppendPreemptedAlloc(victim, placed)
		h.submit(t, p)
		if got := h.raft.sizes[len(h.raft.sizes)-1]; got > 2*jobSize {
			t.Errorf("entry: got %d bytes, want the job once (%d)", got, jobSize)
		}
		want := map[string]string{"moved": jobVersion(v1), "new": jobVersion(v1), "victim": jobVersion(other)}
		for id, w := range want {
			a, _ := h.raft.store.AllocByID(nil, id)
			if a == nil {
				t.Fatalf("alloc %s missing", id)
			}
			if got := jobVersion(a.Job); got != w {
				t.Errorf("alloc %s: job %s, want %s", id, got, w)
			}
		}
	})
}

// jobVersion names a job's version briefly, for messages.
func jobVersion(j *structs.Job) string {
	if j == nil {
		return "no job"
	}
	return fmt.Sprintf("%s@%d", j.ID, j.Version)
}
