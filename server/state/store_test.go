package state

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

func TestSchemaValidates(t *testing.T) {
	if err := Schema().Validate(); err != nil {
		t.Fatalf("schema: %v", err)
	}
}

func TestNodes(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertNode(10, testNode("aaaa-1")))
	must(t, s.UpsertNode(11, testNode("bbbb-1")))
	must(t, s.UpsertNode(12, testNode("aaaa-2")))

	// Re-registration keeps CreateIndex.
	must(t, s.UpsertNode(13, testNode("aaaa-1")))
	n, err := s.NodeByID(nil, "aaaa-1")
	must(t, err)
	if n.CreateIndex != 10 || n.ModifyIndex != 13 {
		t.Errorf("indexes: got create %d modify %d, want 10 13", n.CreateIndex, n.ModifyIndex)
	}

	must(t, s.UpdateNodeStatus(14, "aaaa-1", structs.NodeStatusDown, 99))
	n, _ = s.NodeByID(nil, "aaaa-1")
	if n.Status != structs.NodeStatusDown || n.StatusUpdatedAt != 99 || n.ModifyIndex != 14 {
		t.Errorf("after status update: got %s %d %d", n.Status, n.StatusUpdatedAt, n.ModifyIndex)
	}
	if err := s.UpdateNodeStatus(15, "nope", structs.NodeStatusReady, 1); !errors.Is(err, structs.ErrUnknownNode) {
		t.Errorf("unknown node: got %v, want ErrUnknownNode", err)
	}

	all, _ := s.Nodes(nil)
	if got, want := ids(all), []string{"aaaa-1", "aaaa-2", "bbbb-1"}; !slices.Equal(got, want) {
		t.Errorf("Nodes: got %v, want %v", got, want)
	}
	pre, _ := s.NodesByIDPrefix(nil, "aaaa")
	if got, want := ids(pre), []string{"aaaa-1", "aaaa-2"}; !slices.Equal(got, want) {
		t.Errorf("prefix: got %v, want %v", got, want)
	}

	must(t, s.DeleteNode(16, "bbbb-1"))
	if n, _ := s.NodeByID(nil, "bbbb-1"); n != nil {
		t.Errorf("deleted node still there: %v", n.ID)
	}
	if err := s.DeleteNode(17, "bbbb-1"); !errors.Is(err, structs.ErrUnknownNode) {
		t.Errorf("delete unknown: got %v", err)
	}
	if idx, _ := s.Index(TableNodes); idx != 16 {
		t.Errorf("nodes index: got %d, want 16", idx)
	}
}

func TestWritesNeverMutateStoredObjects(t *testing.T) {
	s := newTestStore(t)
	in := testNode("n1")
	must(t, s.UpsertNode(1, in))
	in.Name = "changed by caller"
	stored, _ := s.NodeByID(nil, "n1")
	if stored.Name != "node-n1" {
		t.Fatalf("caller's object aliased into state: name %q", stored.Name)
	}
	must(t, s.UpdateNodeStatus(2, "n1", structs.NodeStatusDown, 5))
	if stored.Status != structs.NodeStatusReady || stored.ModifyIndex != 1 {
		t.Errorf("old pointer mutated: status %s modify %d", stored.Status, stored.ModifyIndex)
	}

	job := testJob("j", structs.JobTypeService)
	must(t, s.UpsertJob(3, job))
	oldJob, _ := s.JobByID(nil, "default", "j")
	must(t, s.UpsertAllocs(4, []*structs.Allocation{testAlloc("a1", job, "n1", "e1")}))
	if oldJob.Status != structs.JobStatusPending {
		t.Errorf("old job pointer mutated: status %s", oldJob.Status)
	}
	newJob, _ := s.JobByID(nil, "default", "j")
	if newJob.Status != structs.JobStatusRunning || newJob == oldJob {
		t.Errorf("job status: got %s (same pointer %v), want running in a new object", newJob.Status, newJob == oldJob)
	}
}

func TestIndexesAndLatest(t *testing.T) {
	s := newTestStore(t)
	if idx, _ := s.LatestIndex(); idx != 0 {
		t.Fatalf("empty store index: got %d", idx)
	}
	must(t, s.UpsertNode(5, testNode("n")))
	job := testJob("j", structs.JobTypeService)
	must(t, s.UpsertJob(7, job))
	must(t, s.UpsertEvals(9, []*structs.Evaluation{testEval("e", job, structs.EvalStatusPending)}))
	got, _ := s.Indexes()
	want := map[string]uint64{TableNodes: 5, TableJobs: 7, TableJobVersions: 7, TableEvals: 9}
	if len(got) != len(want) || got[TableNodes] != 5 || got[TableJobs] != 7 || got[TableJobVersions] != 7 || got[TableEvals] != 9 {
		t.Errorf("Indexes: got %v, want %v", got, want)
	}
	if idx, _ := s.LatestIndex(); idx != 9 {
		t.Errorf("LatestIndex: got %d, want 9", idx)
	}
}

func TestSnapshotIsFrozen(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertNode(1, testNode("n1")))
	snap, err := s.Snapshot()
	must(t, err)
	must(t, s.UpsertNode(2, testNode("n2")))
	nodes, _ := snap.Nodes(nil)
	if got := ids(nodes); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("snapshot nodes: got %v, want [n1]", got)
	}
	if idx, _ := snap.LatestIndex(); idx != 1 {
		t.Errorf("snapshot index: got %d, want 1", idx)
	}
	live, _ := s.Nodes(nil)
	if len(live) != 2 {
		t.Errorf("live nodes: got %d, want 2", len(live))
	}
}

func nodeQuery(id string) QueryFn {
	return func(ws memdb.WatchSet, s *StateStore) (uint64, error) {
		n, err := s.NodeByID(ws, id)
		if err != nil || n == nil {
			return 0, err
		}
		return n.ModifyIndex, nil
	}
}

func TestBlockingQuery(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertNode(5, testNode("n1")))

	t.Run("answers at once when index is past minIndex", func(t *testing.T) {
		idx, err := s.BlockingQuery(context.Background(), 4, nodeQuery("n1"))
		if err != nil || idx != 5 {
			t.Errorf("got %d %v, want 5 nil", idx, err)
		}
	})

	t.Run("times out with the last answer", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		idx, err := s.BlockingQuery(ctx, 5, nodeQuery("n1"))
		if err != nil || idx != 5 {
			t.Errorf("got %d %v, want 5 nil", idx, err)
		}
	})

	t.Run("wakes on a change to what it read", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan uint64)
		go func() {
			idx, _ := s.BlockingQuery(ctx, 5, nodeQuery("n1"))
			done <- idx
		}()
		// An unrelated write wakes the watch on the table at most; the
		// query must keep waiting until n1 itself changes.
		must(t, s.UpsertNode(6, testNode("other")))
		must(t, s.UpdateNodeStatus(7, "n1", structs.NodeStatusDown, 1))
		if got := <-done; got != 7 {
			t.Errorf("got index %d, want 7", got)
		}
	})

	t.Run("ends when the store is abandoned", func(t *testing.T) {
		s2 := newTestStore(t)
		must(t, s2.UpsertNode(3, testNode("n1")))
		done := make(chan uint64)
		go func() {
			idx, _ := s2.BlockingQuery(context.Background(), 3, nodeQuery("n1"))
			done <- idx
		}()
		s2.Abandon()
		s2.Abandon() // idempotent
		if got := <-done; got != 3 {
			t.Errorf("got index %d, want 3", got)
		}
	})
}

func TestRestore(t *testing.T) {
	src := newTestStore(t)
	job := testJob("j", structs.JobTypeBatch)
	must(t, src.UpsertNode(1, testNode("n1")))
	must(t, src.UpsertJob(2, job))
	must(t, src.UpsertEvals(3, []*structs.Evaluation{testEval("e1", job, structs.EvalStatusComplete)}))
	must(t, src.UpsertAllocs(4, []*structs.Allocation{testAlloc("a1", job, "n1", "e1")}))

	dst := newTestStore(t)
	r, err := dst.Restore()
	must(t, err)
	n, _ := src.NodeByID(nil, "n1")
	j, _ := src.JobByID(nil, "", "j")
	e, _ := src.EvalByID(nil, "e1")
	a, _ := src.AllocByID(nil, "a1")
	must(t, r.NodeRestore(n))
	must(t, r.JobRestore(j))
	must(t, r.EvalRestore(e))
	must(t, r.AllocRestore(a))
	idxs, _ := src.Indexes()
	for k, v := range idxs {
		must(t, r.IndexRestore(k, v))
	}
	if got, _ := dst.NodeByID(nil, "n1"); got != nil {
		t.Fatal("restore visible before Commit")
	}
	must(t, r.Commit())

	gotJob, _ := dst.JobByID(nil, "default", "j")
	if gotJob == nil || gotJob.Status != structs.JobStatusRunning || gotJob.ModifyIndex != 4 {
		t.Errorf("restored job: got %+v", gotJob)
	}
	gotAllocs, _ := dst.AllocsByNode(nil, "n1")
	if len(gotAllocs) != 1 || gotAllocs[0].AllocModifyIndex != 4 {
		t.Errorf("restored allocs: got %v", ids(gotAllocs))
	}
	if idx, _ := dst.LatestIndex(); idx != 4 {
		t.Errorf("restored latest index: got %d, want 4", idx)
	}

	aborted := newTestStore(t)
	r2, _ := aborted.Restore()
	must(t, r2.NodeRestore(n))
	r2.Abort()
	if got, _ := aborted.NodeByID(nil, "n1"); got != nil {
		t.Error("aborted restore left a node")
	}
}

func TestBlockingQueryOnJobSummary(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	must(t, s.UpsertJob(1, job))
	must(t, s.UpsertAllocs(2, []*structs.Allocation{testAlloc("a1", job, "n1", "e1")}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan uint64)
	go func() {
		idx, _ := s.BlockingQuery(ctx, 2, func(ws memdb.WatchSet, s *StateStore) (uint64, error) {
			sum, err := s.JobSummary(ws, "default", "j")
			if err != nil {
				return 0, err
			}
			return sum.ModifyIndex, nil
		})
		done <- idx
	}()
	running := testAlloc("a1", job, "n1", "e1")
	running.ClientStatus = structs.AllocClientStatusRunning
	must(t, s.UpdateAllocsFromClient(3, []*structs.Allocation{running}))
	if got := <-done; got != 3 {
		t.Errorf("got index %d, want 3", got)
	}
}
