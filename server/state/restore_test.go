package state

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestRestoreSharesJobVersions: allocations restored from a snapshot (each
// with its own decoded copy of the job) share one *Job per job version,
// the table's where it is that version, as allocations placed by a plan
// do; an allocation of an older version keeps its own.
func TestRestoreSharesJobVersions(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	job.Version, job.ModifyIndex, job.JobModifyIndex = 2, 20, 20
	old := job.Copy()
	old.Version, old.ModifyIndex, old.JobModifyIndex = 1, 10, 10

	r, err := s.Restore()
	must(t, err)
	must(t, r.JobRestore(job.Copy()))
	for _, id := range []string{"a1", "a2", "a3"} {
		must(t, r.AllocRestore(testAlloc(id, job.Copy(), "n1", "e1")))
	}
	for _, id := range []string{"o1", "o2"} {
		must(t, r.AllocRestore(testAlloc(id, old.Copy(), "n1", "e1")))
	}
	must(t, r.Commit())

	stored, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	get := func(id string) *structs.Allocation {
		t.Helper()
		a, err := s.AllocByID(nil, id)
		must(t, err)
		if a == nil || a.Job == nil {
			t.Fatalf("alloc %s: %+v, want it with its job", id, a)
		}
		return a
	}
	for _, id := range []string{"a1", "a2", "a3"} {
		if get(id).Job != stored {
			t.Errorf("alloc %s: its job is a copy of its own, want the restored table's version %d", id, stored.Version)
		}
	}
	o1, o2 := get("o1").Job, get("o2").Job
	if o1 != o2 || o1 == stored || o1.Version != 1 {
		t.Errorf("older version: o1 %p (v%d), o2 %p, table %p; want o1 == o2, its own version 1", o1, o1.Version, o2, stored)
	}
}
