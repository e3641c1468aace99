package state

import (
	"errors"
	"testing"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

func TestWriteIsAllOrNothing(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertNode(1, testNode("n1")))
	job := testJob("j", structs.JobTypeBatch)

	// A blocking query on the jobs table must not wake for a write that
	// fails half way.
	ws := memdb.NewWatchSet()
	if _, err := s.Jobs(ws, "*"); err != nil {
		t.Fatal(err)
	}
	err := s.Write(2, func(tx *Txn) error {
		if err := tx.UpsertJob(job); err != nil {
			return err
		}
		if err := tx.UpdateNodeStatus("n1", structs.NodeStatusDown, 1); err != nil {
			return err
		}
		return tx.UpsertEvals([]*structs.Evaluation{{JobID: "j"}}) // no ID
	})
	if !errors.Is(err, structs.ErrInvalid) {
		t.Fatalf("Write: got %v, want %v", err, structs.ErrInvalid)
	}
	if got, _ := s.JobByID(nil, "", "j"); got != nil {
		t.Errorf("job visible after a failed write")
	}
	if n, _ := s.NodeByID(nil, "n1"); n.Status != structs.NodeStatusReady {
		t.Errorf("node status after a failed write: got %s, want ready", n.Status)
	}
	if idx, _ := s.LatestIndex(); idx != 1 {
		t.Errorf("LatestIndex after a failed write: got %d, want 1", idx)
	}
	select {
	case <-watchFired(ws):
		t.Errorf("watch fired for a failed write")
	default:
	}
}

func TestWriteSeesItsOwnWritesAndRefreshesStatus(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeBatch)
	must(t, s.Write(5, func(tx *Txn) error {
		if err := tx.UpsertJob(job); err != nil {
			return err
		}
		got, err := tx.JobByID("", "j")
		if err != nil || got == nil {
			t.Errorf("job inside its own txn: %v, %v", got, err)
		}
		return tx.UpsertEvals([]*structs.Evaluation{testEval("e1", job, structs.EvalStatusPending)})
	}))
	// The job and its eval land at one index.
	for _, table := range []string{TableJobs, TableEvals} {
		if idx, _ := s.Index(table); idx != 5 {
			t.Errorf("index of %s: got %d, want 5", table, idx)
		}
	}
	if e, _ := s.EvalByID(nil, "e1"); e == nil || e.CreateIndex != 5 {
		t.Errorf("eval: got %+v, want created at 5", e)
	}

	// Allocations all finishing in one txn with the eval completing makes
	// the batch job dead at that index.
	a := testAlloc("a1", job, "n1", "e1")
	must(t, s.UpsertAllocs(6, []*structs.Allocation{a}))
	must(t, s.Write(7, func(tx *Txn) error {
		done := &structs.Allocation{ID: "a1", ClientStatus: structs.AllocClientStatusComplete}
		if err := tx.UpdateAllocsFromClient([]*structs.Allocation{nil, done}); err != nil {
			return err
		}
		return tx.UpsertEvals([]*structs.Evaluation{testEval("e1", job, structs.EvalStatusComplete)})
	}))
	got, _ := s.JobByID(nil, "", "j")
	if got.Status != structs.JobStatusDead || got.ModifyIndex != 7 {
		t.Errorf("job: got %s at %d, want dead at 7", got.Status, got.ModifyIndex)
	}
}

func TestClientUpdateDropsNilTaskStatesAndEvents(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeBatch)
	must(t, s.UpsertAllocs(1, []*structs.Allocation{testAlloc("a1", job, "n1", "e1")}))
	update := &structs.Allocation{ID: "a1", ClientStatus: structs.AllocClientStatusRunning, TaskStates: map[string]*structs.TaskState{
		"t":    {State: structs.TaskStateRunning, Events: []*structs.TaskEvent{nil, {Type: structs.TaskStarted}}},
		"gone": nil,
	}}
	must(t, s.UpdateAllocsFromClient(2, []*structs.Allocation{update}))
	a, _ := s.AllocByID(nil, "a1")
	if len(a.TaskStates) != 1 || len(a.TaskStates["t"].Events) != 1 || a.TaskStates["t"].Events[0] == nil {
		t.Fatalf("task states: got %+v, want only t with one event", a.TaskStates)
	}
	a.Copy() // must not panic
}

// watchFired returns a channel closed when any channel of ws fires.
func watchFired(ws memdb.WatchSet) <-chan struct{} {
	out := make(chan struct{})
	for ch := range ws {
		select {
		case <-ch:
			close(out)
			return out
		default:
		}
	}
	return out
}
