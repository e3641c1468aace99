package fsm

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestPeriodicLaunchApplyAndSnapshot: a launch is stored, only moves
// forward, goes away with its purged job, and survives a snapshot.
func TestPeriodicLaunchApplyAndSnapshot(t *testing.T) {
	f, _ := newTestFSM(t)
	at := func(sec int64) *structs.PeriodicLaunchUpsertRequest {
		return &structs.PeriodicLaunchUpsertRequest{Launch: &structs.PeriodicLaunch{Namespace: "default", ID: "p", Launch: time.Unix(sec, 0)}}
	}
	apply(t, f, 10, structs.PeriodicLaunchUpsertRequestType, at(200))
	apply(t, f, 11, structs.PeriodicLaunchUpsertRequestType, at(100)) // older: ignored
	l, err := f.State().PeriodicLaunchByID(nil, "default", "p")
	if err != nil || l == nil || l.Launch.Unix() != 200 || l.CreateIndex != 10 {
		t.Fatalf("launch = %+v, %v; want 200 created at 10", l, err)
	}

	sink := persist(t, f)
	dst, _ := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got, _ := dst.State().PeriodicLaunchByID(nil, "default", "p"); got == nil || !got.Launch.Equal(l.Launch) {
		t.Errorf("restored launch = %+v, want %+v", got, l)
	}

	apply(t, f, 12, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("p")})
	apply(t, f, 13, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "p", Purge: true,
		WriteRequest: structs.WriteRequest{Namespace: "default"}})
	if got, _ := f.State().PeriodicLaunchByID(nil, "default", "p"); got != nil {
		t.Errorf("launch after purge = %+v, want none", got)
	}
}
