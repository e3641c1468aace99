package state

import (
	"reflect"
	"testing"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// queueDerived is every derived queue row of a store, for comparing the
// incremental rows with a rebuild.
type queueDerived struct {
	Rows    []queueRow
	Waiting []waitingJob
	GPUs    int
}

func readQueueDerived(t *testing.T, s *StateStore) queueDerived {
	t.Helper()
	txn := s.db.Txn(false)
	var d queueDerived
	rows, err := queueRows(nil, txn)
	must(t, err)
	for _, r := range rows {
		d.Rows = append(d.Rows, *r)
	}
	iter, err := txn.Get(TableQueueWaiting, indexID)
	must(t, err)
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		d.Waiting = append(d.Waiting, *raw.(*waitingJob))
	}
	d.GPUs, err = clusterGPUs(nil, txn)
	must(t, err)
	return d
}

// checkQueueRebuild fails the test unless the store's derived queue rows
// equal a rebuild from its jobs, evaluations, allocations and nodes (done
// on a snapshot, so the store is left alone).
func checkQueueRebuild(t *testing.T, s *StateStore, step string) {
	t.Helper()
	incremental := readQueueDerived(t, s)
	snap, err := s.Snapshot()
	must(t, err)
	must(t, snap.write(func(txn *memdb.Txn) error { return rebuildQueueUsage(txn) }))
	if rebuilt := readQueueDerived(t, snap.StateStore); !reflect.DeepEqual(incremental, rebuilt) {
		t.Fatalf("after %s: incremental queue rows\n%+v\ndiffer from a rebuild\n%+v", step, incremental, rebuilt)
	}
}

func wantQueueUsage(t *testing.T, s *StateStore, want map[string]structs.QueueUsage) {
	t.Helper()
	got, err := s.QueueUsage()
	must(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("queue usage = %+v, want %+v", got, want)
	}
}

// TestQueueUsageMatchesRebuild runs a mixed sequence of writes (nodes
// joining, draining, failing and leaving; jobs registered, moved between
// queues and purged; allocations placed, finished, stopped and updated in
// place into another queue; evaluations blocked and unblocked), some of
// them together in one transaction, and checks after each that the
// incremental rows equal a rebuild, and at the end what they hold.
func TestQueueUsageMatchesRebuild(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertQueue(1, &structs.Queue{Name: "research", Weight: 3}))
	must(t, s.UpsertQueue(2, &structs.Queue{Name: "prod"}))
	must(t, s.UpsertNode(3, gpuTestNode("n1", 4)))
	sick := gpuTestNode("n2", 2)
	sick.NodeResources.Devices[0].Instances[1].Healthy = false
	must(t, s.UpsertNode(4, sick))
	checkQueueRebuild(t, s, "two nodes")
	if n, _ := s.ClusterGPUs(); n != 5 {
		t.Fatalf("cluster GPUs = %d, want 5 (4 + 1 healthy)", n)
	}

	r1, p1, d1 := queueJob("r1", "research"), queueJob("p1", "prod"), queueJob("d1", "")
	index := uint64(10)
	step := func(what string, fn func(tx *Txn) error) {
		t.Helper()
		index++
		must(t, s.Write(index, fn))
		checkQueueRebuild(t, s, what)
	}
	step("jobs and placements in one transaction", func(tx *Txn) error {
		for _, j := range []*structs.Job{r1, p1, d1} {
			if err := tx.UpsertJob(j); err != nil {
				return err
			}
		}
		return tx.UpsertAllocs([]*structs.Allocation{
			gpuAlloc("r1-a", r1, "n1", 0, 0, "n1-gpu0", "n1-gpu1"),
			gpuAlloc("r1-b", r1, "n1", 25, 1024, "n1-gpu2"),
			gpuAlloc("p1-a", p1, "n1", 0, 0, "n1-gpu3"),
			gpuAlloc("d1-a", d1, "n2", 50, 0, "n2-gpu0"),
			gpuAlloc("d1-cpu", d1, "n2", 0, 0), // no GPU
		})
	})
	step("blocked evaluations", func(tx *Txn) error {
		return tx.UpsertEvals([]*structs.Evaluation{
			testEval("e-r1", r1, structs.EvalStatusBlocked),
			testEval("e-r1b", r1, structs.EvalStatusBlocked),
			testEval("e-p1", p1, structs.EvalStatusBlocked),
			testEval("e-d1", d1, structs.EvalStatusPending),
		})
	})
	wantQueueUsage(t, s, map[string]structs.QueueUsage{
		"research": {Queue: "research", GPUs: 2.25, Waiting: 1},
		"prod":     {Queue: "prod", GPUs: 1, Waiting: 1},
		"default":  {Queue: "default", GPUs: 0.5},
	})

	step("one of two blocked evaluations completes, a pending one blocks", func(tx *Txn) error {
		return tx.UpsertEvals([]*structs.Evaluation{
			testEval("e-r1", r1, structs.EvalStatusComplete),
			testEval("e-d1", d1, structs.EvalStatusBlocked),
		})
	})
	step("a finished and a stopped allocation", func(tx *Txn) error {
		if err := tx.UpdateAllocsFromClient([]*structs.Allocation{{ID: "p1-a", ClientStatus: structs.AllocClientStatusComplete}}); err != nil {
			return err
		}
		stop := gpuAlloc("r1-b", r1, "n1", 25, 1024, "n1-gpu2")
		stop.DesiredStatus = structs.AllocDesiredStatusStop
		return tx.UpsertAllocs([]*structs.Allocation{stop})
	})
	p2 := p1.Copy()
	p2.Queue = "research"
	step("a job moves to another queue with its waiting evaluation and an in-place update", func(tx *Txn) error {
		if err := tx.UpsertJob(p2); err != nil {
			return err
		}
		return tx.UpsertAllocs([]*structs.Allocation{gpuAlloc("p1-b", p2, "n2", 0, 0, "n2-gpu0")})
	})
	moved := gpuAlloc("d1-a", p2, "n2", 50, 0, "n2-gpu0")
	step("an in-place update moves an allocation to a job version in another queue", func(tx *Txn) error {
		return tx.UpsertAllocs([]*structs.Allocation{moved})
	})
	step("a job with a blocked evaluation is purged", func(tx *Txn) error { return tx.DeleteJob("default", "d1") })
	step("its blocked evaluation is cancelled after the purge", func(tx *Txn) error {
		return tx.UpsertEvals([]*structs.Evaluation{testEval("e-d1", d1, structs.EvalStatusCancelled)})
	})
	late := queueJob("late", "prod")
	step("a blocked evaluation written before its job", func(tx *Txn) error {
		return tx.UpsertEvals([]*structs.Evaluation{testEval("e-late", late, structs.EvalStatusBlocked)})
	})
	step("then the job", func(tx *Txn) error { return tx.UpsertJob(late) })
	step("nodes drain, go down and leave, with allocations in the same transaction", func(tx *Txn) error {
		drained := gpuTestNode("n1", 4)
		drained.Drain = true
		if err := tx.UpsertNode(drained); err != nil {
			return err
		}
		if err := tx.UpsertAllocs([]*structs.Allocation{gpuAlloc("late-a", late, "n1", 0, 0, "n1-gpu3")}); err != nil {
			return err
		}
		if err := tx.UpdateNodeStatus("n2", structs.NodeStatusDown, 1); err != nil {
			return err
		}
		return tx.DeleteNode("n2")
	})
	if n, _ := s.ClusterGPUs(); n != 0 {
		t.Errorf("cluster GPUs with n1 draining and n2 gone = %d, want 0", n)
	}
	step("the drained node comes back", func(tx *Txn) error { return tx.UpsertNode(gpuTestNode("n1", 4)) })
	if n, _ := s.ClusterGPUs(); n != 4 {
		t.Errorf("cluster GPUs after n1 is back = %d, want 4", n)
	}

	// research: r1-a (2 GPUs), p1-b (1), d1-a moved in (0.5); waiting: r1
	// (e-r1b) and p1 (e-p1, moved with its job). prod: late-a (1), late
	// waiting. default: nothing (d1 purged).
	wantQueueUsage(t, s, map[string]structs.QueueUsage{
		"research": {Queue: "research", GPUs: 3.5, Waiting: 2},
		"prod":     {Queue: "prod", GPUs: 1, Waiting: 1},
	})
	st, err := s.QueueStatuses(nil, "")
	must(t, err)
	if len(st) != 3 || st[2].Queue.Name != "research" || st[2].Jobs != 2 || st[1].Jobs != 1 || st[0].Jobs != 0 {
		t.Fatalf("statuses = %+v, want default, prod (1 job), research (2 jobs)", st)
	}
	// Fair shares of 4 GPUs: research weighs 3, prod 1, default is idle.
	if st[2].FairShare != 3 || st[1].FairShare != 1 || st[0].FairShare != 0 || st[2].ClusterGPUs != 4 {
		t.Errorf("fair shares = default %v prod %v research %v of %d, want 0 1 3 of 4",
			st[0].FairShare, st[1].FairShare, st[2].FairShare, st[2].ClusterGPUs)
	}
	if err := s.DeleteQueue(100, "prod"); err == nil {
		t.Errorf("deleting prod, named by job late, succeeded")
	}
}

// TestQueueUsageRebuiltOnRestore: a restore rebuilds the derived rows from
// what it restored.
func TestQueueUsageRebuiltOnRestore(t *testing.T) {
	s := newTestStore(t)
	j := queueJob("train", "research")
	done := gpuAlloc("a2", j, "n1", 0, 0, "n1-gpu1")
	done.ClientStatus = structs.AllocClientStatusComplete
	r, err := s.Restore()
	must(t, err)
	must(t, r.NodeRestore(gpuTestNode("n1", 3)))
	must(t, r.QueueRestore(&structs.Queue{Name: "research", Weight: 2, CreateIndex: 1, ModifyIndex: 1}))
	must(t, r.JobRestore(j))
	must(t, r.EvalRestore(testEval("e1", j, structs.EvalStatusBlocked)))
	must(t, r.AllocRestore(gpuAlloc("a1", j, "n1", 40, 0, "n1-gpu0")))
	must(t, r.AllocRestore(done))
	must(t, r.Commit())
	wantQueueUsage(t, s, map[string]structs.QueueUsage{"research": {Queue: "research", GPUs: 0.4, Waiting: 1}})
	if n, _ := s.ClusterGPUs(); n != 3 {
		t.Errorf("cluster GPUs after restore = %d, want 3", n)
	}
	st, err := s.QueueStatus(nil, "research")
	must(t, err)
	if st == nil || st.Queue.Weight != 2 || st.Jobs != 1 || st.FairShare != 3 {
		t.Errorf("research after restore = %+v, want weight 2, 1 job, all 3 GPUs as its fair share", st)
	}
	if st, _ := s.QueueStatus(nil, "nope"); st != nil {
		t.Errorf("status of an unknown queue = %+v, want nil", st)
	}
}
