package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestJobVersionsStabilityAndSnapshot: a changed spec makes a version,
// stability applies through Raft to the version and the current job,
// and versions survive a snapshot.
func TestJobVersionsStabilityAndSnapshot(t *testing.T) {
	f, _ := newTestFSM(t)
	job := testJob("j")
	apply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	apply(t, f, 3, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job}) // unchanged: no version
	v1 := job.Copy()
	v1.TaskGroups[0].Count = 3
	apply(t, f, 4, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: v1})
	apply(t, f, 5, structs.JobStabilityRequestType, &structs.JobStabilityRequest{JobID: "j", JobVersion: 0, Stable: true})
	apply(t, f, 6, structs.JobStabilityRequestType, &structs.JobStabilityRequest{JobID: "j", JobVersion: 1, Stable: true})

	versions, err := f.State().JobVersions(nil, "", "j")
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 2 || versions[0].Version != 1 || versions[1].Version != 0 || !versions[0].Stable || !versions[1].Stable {
		t.Fatalf("versions = %+v, want 1 then 0, both stable", versions)
	}
	cur, _ := f.State().JobByID(nil, "", "j")
	if cur.Version != 1 || !cur.Stable {
		t.Errorf("job version %d stable %v, want 1 stable", cur.Version, cur.Stable)
	}
	// Resubmitting the same spec keeps the version and its stability.
	apply(t, f, 7, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: v1})
	if cur, _ = f.State().JobByID(nil, "", "j"); cur.Version != 1 || !cur.Stable {
		t.Errorf("after resubmit: version %d stable %v, want 1 stable", cur.Version, cur.Stable)
	}
	if resp := f.Apply(logEntry(t, 8, structs.JobStabilityRequestType, &structs.JobStabilityRequest{JobID: "j", JobVersion: 9, Stable: true})); resp == nil {
		t.Error("stability of an unknown version applied, want an error")
	}

	want := dumpState(t, f.State())
	sink := persist(t, f)
	dst, _ := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	got := dumpState(t, dst.State())
	if len(got.Versions) != 2 || got.Versions[0].Stable != want.Versions[0].Stable || got.Versions[1].Version != want.Versions[1].Version {
		t.Errorf("restored versions %+v, want %+v", got.Versions, want.Versions)
	}
}
