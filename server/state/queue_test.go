package state

import (
	"errors"
	"reflect"
	"testing"

	"github.com/droverhq/drover/structs"
)

func queueJob(id, queue string) *structs.Job {
	j := testJob(id, structs.JobTypeBatch)
	j.Queue = queue
	return j
}

func queueNames(qs []*structs.Queue) []string {
	out := make([]string, 0, len(qs))
	for _, q := range qs {
		out = append(out, q.Name)
	}
	return out
}

func TestQueuesUpsertListDelete(t *testing.T) {
	s := newTestStore(t)
	qs, err := s.Queues()
	must(t, err)
	if len(qs) != 1 || *qs[0] != *structs.DefaultQueueObject() {
		t.Fatalf("queues of an empty store = %+v, want the implicit default", qs)
	}

	must(t, s.UpsertQueue(1, &structs.Queue{Name: "research", GuaranteedGPUs: 2}))
	must(t, s.UpsertQueue(2, &structs.Queue{Name: "batch", Weight: 5, MaxGPUs: 8}))
	must(t, s.UpsertQueue(3, &structs.Queue{Name: "research", Weight: 3, GuaranteedGPUs: 2, Description: "R&D"}))
	qs, err = s.Queues()
	must(t, err)
	if got := queueNames(qs); !reflect.DeepEqual(got, []string{"batch", "default", "research"}) {
		t.Fatalf("queue names = %v, want [batch default research]", got)
	}
	r, err := s.QueueByName(nil, "research")
	must(t, err)
	want := structs.Queue{Name: "research", Description: "R&D", Weight: 3, GuaranteedGPUs: 2, CreateIndex: 1, ModifyIndex: 3}
	if r == nil || *r != want {
		t.Errorf("research = %+v, want %+v", r, want)
	}
	if b, _ := s.QueueByName(nil, "batch"); b == nil || b.Weight != 5 {
		t.Errorf("batch = %+v, want weight 5", b)
	}
	if idx, _ := s.Index(TableQueues); idx != 3 {
		t.Errorf("queues index = %d, want 3", idx)
	}

	// The default queue may be changed (and is then stored), never deleted.
	must(t, s.UpsertQueue(4, &structs.Queue{Name: "default", Weight: 2}))
	if d, _ := s.QueueByName(nil, "default"); d == nil || d.Weight != 2 || d.CreateIndex != 4 {
		t.Errorf("changed default = %+v, want weight 2 stored at 4", d)
	}
	if q, _ := s.QueueByName(nil, "nope"); q != nil {
		t.Errorf("unknown queue = %+v, want nil", q)
	}

	must(t, s.UpsertJob(5, queueJob("sweep", "research")))
	refusals := []struct {
		name string
		want error
	}{
		{"default", structs.ErrDefaultQueue},
		{"research", structs.ErrQueueInUse},
		{"nope", structs.ErrNotFound},
	}
	for _, tt := range refusals {
		if err := s.DeleteQueue(6, tt.name); !errors.Is(err, tt.want) {
			t.Errorf("delete %q: got %v, want %v", tt.name, err, tt.want)
		}
	}
	// Once the job is purged, the queue can go.
	must(t, s.DeleteJob(7, "default", "sweep"))
	must(t, s.DeleteQueue(8, "research"))
	if q, _ := s.QueueByName(nil, "research"); q != nil {
		t.Errorf("research after delete = %+v, want none", q)
	}
	if idx, _ := s.Index(TableQueues); idx != 8 {
		t.Errorf("queues index after delete = %d, want 8", idx)
	}
}

func TestUpsertQueueRefusesInvalid(t *testing.T) {
	s := newTestStore(t)
	tests := []struct {
		name string
		q    *structs.Queue
	}{
		{"missing", nil},
		{"bad name", &structs.Queue{Name: "no spaces"}},
		{"negative weight", &structs.Queue{Name: "q", Weight: -1}},
		{"weight over 1000", &structs.Queue{Name: "q", Weight: 1001}},
		{"max below guaranteed", &structs.Queue{Name: "q", GuaranteedGPUs: 4, MaxGPUs: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.UpsertQueue(1, tt.q); !errors.Is(err, structs.ErrInvalid) {
				t.Fatalf("got %v, want an error wrapping ErrInvalid", err)
			}
		})
	}
	if qs, _ := s.Queues(); len(qs) != 1 {
		t.Errorf("queues after refusals = %v, want only the default", queueNames(qs))
	}
}

// TestUpsertQueueKeepsCallerCopy: the stored queue is a canonicalized
// copy; the caller's value is untouched.
func TestUpsertQueueKeepsCallerCopy(t *testing.T) {
	s := newTestStore(t)
	in := &structs.Queue{Name: "q"}
	must(t, s.UpsertQueue(1, in))
	if in.Weight != 0 || in.CreateIndex != 0 {
		t.Errorf("caller's queue changed to %+v", in)
	}
	got, _ := s.QueueByName(nil, "q")
	if got.Weight != 1 {
		t.Errorf("stored weight = %d, want the default 1", got.Weight)
	}
}
