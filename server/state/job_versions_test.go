package state

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestJobVersionsKeepsLastN: each changed spec is a version, an unchanged
// one is not, only the last structs.JobTrackedVersions stay, and a purge
// drops them all.
func TestJobVersionsKeepsLastN(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	must(t, s.UpsertJob(1, job))
	must(t, s.UpsertJob(2, job))
	for i := 0; i < structs.JobTrackedVersions+2; i++ {
		c := job.Copy()
		c.Meta = map[string]string{"n": string(rune('a' + i))}
		must(t, s.UpsertJob(uint64(10+i), c))
	}
	versions, err := s.JobVersions(nil, "", "j")
	must(t, err)
	if len(versions) != structs.JobTrackedVersions {
		t.Fatalf("got %d versions, want %d", len(versions), structs.JobTrackedVersions)
	}
	if versions[0].Version != uint64(structs.JobTrackedVersions+2) || versions[len(versions)-1].Version != 3 {
		t.Errorf("versions run %d..%d, want %d..3", versions[0].Version, versions[len(versions)-1].Version, structs.JobTrackedVersions+2)
	}
	if v, _ := s.JobByIDAndVersion(nil, "", "j", 4); v == nil || v.Meta["n"] != "d" {
		t.Errorf("version 4 = %+v, want meta n=d", v)
	}
	if v, _ := s.JobByIDAndVersion(nil, "", "j", 0); v != nil {
		t.Errorf("version 0 still stored after pruning")
	}
	must(t, s.DeleteJob(30, "", "j"))
	if versions, _ = s.JobVersions(nil, "", "j"); len(versions) != 0 {
		t.Errorf("%d versions after purge, want 0", len(versions))
	}
}
