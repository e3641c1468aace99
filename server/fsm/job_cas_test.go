package fsm

import (
	"errors"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestApplyJobRegister_EnforceIndex: a check-and-set registration applies
// only while the stored job's JobModifyIndex is the one it names (0: no
// job); one that lost applies nothing, not even its evaluation. Two
// entries naming the same index, as two racing writers would send, are
// decided by their order in the log: the first wins.
func TestApplyJobRegister_EnforceIndex(t *testing.T) {
	f, rec := newTestFSM(t)
	cas := func(index uint64, job *structs.Job, want uint64, evalID string) error {
		req := &structs.JobRegisterRequest{Job: job, Eval: testEval(evalID, job.ID, structs.EvalStatusPending),
			EnforceIndex: true, JobModifyIndex: want}
		err, _ := f.Apply(logEntry(t, index, structs.JobRegisterRequestType, req)).(error)
		return err
	}
	if err := cas(10, testJob("j"), 5, "e0"); !errors.Is(err, structs.ErrConflict) ||
		err.Error() != "enforcing job modify index 5: job does not exist" {
		t.Fatalf("index 5 for a job that does not exist: %v, want the conflict", err)
	}
	if err := cas(11, testJob("j"), 0, "e1"); err != nil {
		t.Fatalf("index 0 for a new job: %v", err)
	}
	checkNotified(t, rec, []string{"e1@11"}, nil)

	a, b := testJob("j"), testJob("j")
	a.TaskGroups[0].Count, b.TaskGroups[0].Count = 2, 3
	if err := cas(12, a, 11, "e2"); err != nil {
		t.Fatalf("first writer at index 11: %v", err)
	}
	err := cas(13, b, 11, "e3")
	if !errors.Is(err, structs.ErrConflict) || err.Error() != "enforcing job modify index 11: job exists with conflicting job modify index: 12" {
		t.Fatalf("second writer at index 11: %v, want the conflict", err)
	}
	checkNotified(t, rec, []string{"e2@12"}, nil)
	job, _ := f.State().JobByID(nil, structs.DefaultNamespace, "j")
	if job.TaskGroups[0].Count != 2 || job.JobModifyIndex != 12 {
		t.Errorf("stored job: count %d at %d, want the first writer's 2 at 12", job.TaskGroups[0].Count, job.JobModifyIndex)
	}
	if e, _ := f.State().EvalByID(nil, "e3"); e != nil {
		t.Errorf("the losing registration's evaluation was stored: %+v", e)
	}
	if err := cas(14, testJob("j"), 0, "e4"); !errors.Is(err, structs.ErrConflict) {
		t.Errorf("index 0 for an existing job: %v, want a conflict", err)
	}
}
