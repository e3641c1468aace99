package fsm

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// TestApplyQueues: upserts and deletes apply, an upsert retries blocked
// evaluations (a capacity change), and refusals are answers (not
// crashes) that change nothing.
func TestApplyQueues(t *testing.T) {
	f, rec := newTestFSM(t)
	apply(t, f, 1, structs.QueueUpsertRequestType, &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "research", Weight: 3}})
	checkNotified(t, rec, nil, []uint64{1})
	job := testJob("sweep")
	job.Queue = "research"
	apply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: testEval("e1", "sweep", structs.EvalStatusBlocked)})
	rec.take()
	if u, _ := f.State().QueueUsage(); u["research"].Waiting != 1 {
		t.Errorf("research usage = %+v, want 1 job waiting", u["research"])
	}

	refusals := []struct {
		name string
		typ  structs.MessageType
		msg  any
		want error
	}{
		{"delete default", structs.QueueDeleteRequestType, &structs.QueueDeleteRequest{Name: "default"}, structs.ErrDefaultQueue},
		{"delete in use", structs.QueueDeleteRequestType, &structs.QueueDeleteRequest{Name: "research"}, structs.ErrQueueInUse},
		{"max below guaranteed", structs.QueueUpsertRequestType, &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "q", GuaranteedGPUs: 2, MaxGPUs: 1}}, structs.ErrInvalid},
		{"missing queue", structs.QueueUpsertRequestType, &structs.QueueUpsertRequest{}, structs.ErrInvalid},
	}
	for i, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.Apply(logEntry(t, uint64(10+i), tt.typ, tt.msg))
			if err, _ := resp.(error); !errors.Is(err, tt.want) {
				t.Fatalf("got answer %v, want %v", resp, tt.want)
			}
		})
	}
	checkNotified(t, rec, nil, nil)
	if idx, _ := f.State().Index(state.TableQueues); idx != 1 {
		t.Errorf("queues index after refusals = %d, want 1", idx)
	}

	apply(t, f, 20, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "sweep", Purge: true})
	apply(t, f, 21, structs.QueueDeleteRequestType, &structs.QueueDeleteRequest{Name: "research"})
	if q, _ := f.State().QueueByName(nil, "research"); q != nil {
		t.Errorf("queue after delete = %+v, want none", q)
	}
}

// TestSnapshotRestoreQueues: stored queues survive a snapshot (the
// implicit default is not written), and the derived usage is rebuilt.
func TestSnapshotRestoreQueues(t *testing.T) {
	src, _ := newTestFSM(t)
	populate(t, src) // job "j" in the default queue holds one GPU
	apply(t, src, 7, structs.QueueUpsertRequestType, &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "research", Weight: 4, GuaranteedGPUs: 1, MaxGPUs: 2}})
	job := testJob("sweep")
	job.Queue = "research"
	apply(t, src, 8, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: testEval("e2", "sweep", structs.EvalStatusBlocked)})
	sink := persist(t, src)

	dst, _ := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	want, err := src.State().QueueStatuses(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := dst.State().QueueStatuses(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored queue statuses differ:\n got %+v\nwant %+v", got, want)
	}
	if len(got) != 2 || got[0].Queue.CreateIndex != 0 || got[0].Usage.GPUs != 1 ||
		got[1].Queue.Weight != 4 || got[1].Usage.Waiting != 1 || got[1].ClusterGPUs != 1 {
		t.Errorf("restored = %+v %+v, want the implicit default with 1 GPU and research (weight 4) with 1 waiting, of 1 GPU", got[0], got[1])
	}
}

// TestQueueUsageDropIsCapacityChange: every write that lowers a queue's
// GPUs (an allocation stopped by a plan, or finished by its client) also
// reports a capacity change, which unblocks the blocked evaluations; so
// queue usage needs no wake-up of its own.
func TestQueueUsageDropIsCapacityChange(t *testing.T) {
	for _, tt := range []struct {
		name string
		typ  structs.MessageType
		msg  func(a *structs.Allocation) any
	}{
		{"plan stops the allocation", structs.ApplyPlanResultsRequestType, func(a *structs.Allocation) any {
			stop := a.Copy()
			stop.DesiredStatus = structs.AllocDesiredStatusStop
			return &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{stop}}
		}},
		{"client finishes the allocation", structs.AllocClientUpdateRequestType, func(a *structs.Allocation) any {
			return &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusComplete}}}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, rec := newTestFSM(t)
			populate(t, f) // allocation a1 of job j holds one GPU in the default queue
			rec.take()
			a, _ := f.State().AllocByID(nil, "a1")
			if u, _ := f.State().QueueUsage(); u["default"].GPUs != 1 {
				t.Fatalf("default queue before = %+v, want 1 GPU", u["default"])
			}
			apply(t, f, 10, tt.typ, tt.msg(a))
			if u, _ := f.State().QueueUsage(); u["default"].GPUs != 0 {
				t.Errorf("default queue after = %+v, want no GPUs", u["default"])
			}
			checkNotified(t, rec, nil, []uint64{10})
		})
	}
}
