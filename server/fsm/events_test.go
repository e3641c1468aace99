package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/droverhq/drover/structs"
)

// sink records what the FSM published.
type sink struct {
	mu      sync.Mutex
	indexes []uint64
	events  []structs.Event
}

func (s *sink) Publish(index uint64, events []structs.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indexes = append(s.indexes, index)
	s.events = append(s.events, events...)
}

// take returns and clears the events, each as "Topic Type Key @Index".
func (s *sink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		out = append(out, fmt.Sprintf("%s %s %s @%d", e.Topic, e.Type, e.Key, e.Index))
	}
	s.events = nil
	return out
}

func gpuNode(id string, healthy bool) *structs.Node {
	n := testNode(id)
	n.SecretID = "secret-" + id
	n.NodeResources = &structs.NodeResources{Devices: []*structs.NodeDeviceResource{{
		Vendor: "nvidia", Type: "gpu", Name: "H100", Attributes: map[string]string{"memory": "80 GiB"},
		Instances: []*structs.NodeDevice{{ID: "GPU-a", Healthy: true}, {ID: "GPU-b", Healthy: healthy}},
	}}}
	return n
}

// TestEventsFromApplies applies entries of each kind in turn and checks
// the events each one publishes: none for a failed entry.
func TestEventsFromApplies(t *testing.T) {
	f, _ := newTestFSM(t)
	rec := &sink{}
	f.SetEventSink(rec)
	job := testJob("j")
	alloc := testAlloc("a1", job, "n1")
	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	running := &structs.Allocation{ID: "a1", NodeID: "n1", JobID: "j", Namespace: "default", ClientStatus: structs.AllocClientStatusRunning}

	tests := []struct {
		name string
		typ  structs.MessageType
		msg  any
		want []string
	}{
		{"node registers", structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: gpuNode("n1", true)},
			[]string{"Node NodeRegistration n1 @1"}},
		{"node status", structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusDown},
			[]string{"Node NodeEvent n1 @2"}},
		{"unknown node: a failed entry publishes nothing", structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "ghost", Status: structs.NodeStatusDown},
			nil},
		{"a GPU turns unhealthy", structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: gpuNode("n1", false)},
			[]string{"Node NodeRegistration n1 @4", "GPU GPUHealthChanged GPU-b @4"}},
		{"job registers with its eval", structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: testEval("e1", "j", structs.EvalStatusPending)},
			[]string{"Job JobRegistered j @5", "Evaluation EvaluationUpdated e1 @5"}},
		{"plan places an alloc", structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{alloc},
			EvalUpdate: &structs.Evaluation{ID: "e1", Namespace: "default", JobID: "j", Type: job.Type, Status: structs.EvalStatusComplete}},
			[]string{"Allocation AllocationCreated a1 @6", "Evaluation EvaluationUpdated e1 @6", "Job JobStatusUpdated j @6"}},
		{"client reports running", structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{running}},
			[]string{"Allocation AllocationUpdated a1 @7"}},
		{"plan stops it", structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{stop}},
			[]string{"Allocation AllocationUpdateDesiredStatus a1 @8", "Job JobStatusUpdated j @8"}}, // the job is dead
		{"eval update", structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{testEval("e2", "j", structs.EvalStatusBlocked)}},
			[]string{"Evaluation EvaluationUpdated e2 @9"}},
		{"job stops", structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "j", WriteRequest: structs.WriteRequest{Namespace: "default"}},
			[]string{"Job JobDeregistered j @10"}},
		{"job purged", structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "j", Purge: true, WriteRequest: structs.WriteRequest{Namespace: "default"}},
			[]string{"Job JobDeregistered j @11"}},
		{"quota", structs.QuotaUpsertRequestType, &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{gpuQuota("gpus", 2)}},
			[]string{"Quota QuotaUpserted gpus @12"}},
		{"queue", structs.QueueUpsertRequestType, &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "research", Weight: 3}},
			[]string{"Queue QueueUpserted research @13"}},
		{"queue deleted", structs.QueueDeleteRequestType, &structs.QueueDeleteRequest{Name: "research"},
			[]string{"Queue QueueDeleted research @14"}},
		{"node deregisters", structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeID: "n1"},
			[]string{"Node NodeDeregistration n1 @15"}},
		{"ACL writes publish nothing", structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "p", Rules: `namespace "default" { policy = "read" }`}}},
			nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = f.Apply(logEntry(t, uint64(i+1), tt.typ, tt.msg))
			if got := rec.take(); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEventPayloads: payloads carry the stored objects under Nomad's
// names, without the node's secret or the allocation's job, and a purge
// says Deleted.
func TestEventPayloads(t *testing.T) {
	f, _ := newTestFSM(t)
	rec := &sink{}
	f.SetEventSink(rec)
	job := testJob("j")
	apply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: gpuNode("n1", true)})
	apply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	apply(t, f, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{testAlloc("a1", job, "n1")}})
	apply(t, f, 4, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "j", Purge: true, WriteRequest: structs.WriteRequest{Namespace: "default"}})

	rec.mu.Lock()
	defer rec.mu.Unlock()
	byType := map[string]structs.Event{}
	for _, e := range rec.events {
		byType[e.Type] = e
	}
	node := byType[structs.TypeNodeRegistration].Payload["Node"].(*EventNode)
	if node.SecretID != "" || node.ID != "n1" {
		t.Errorf("node payload: ID %q SecretID %q, want n1 and no secret", node.ID, node.SecretID)
	}
	if b, _ := json.Marshal(node); !strings.Contains(string(b), `"Attributes":{"memory":{"String":"80 GiB"}}`) || strings.Contains(string(b), "secret") {
		t.Errorf("node payload JSON: %s, want Nomad-shaped device attributes and no secret", b)
	}
	if stored, _ := f.State().NodeByID(nil, "n1"); stored.SecretID != "secret-n1" {
		t.Errorf("the stored node lost its secret: %q", stored.SecretID)
	}
	created := byType[structs.TypeAllocationCreated]
	if a := created.Payload["Allocation"].(*structs.Allocation); a.Job != nil || a.ModifyIndex != 3 {
		t.Errorf("alloc payload: job %v modify index %d, want no job and 3", a.Job, a.ModifyIndex)
	}
	if !slices.Equal(created.FilterKeys, []string{"j"}) || created.Namespace != "default" {
		t.Errorf("alloc event: filter keys %v namespace %q, want [j] default", created.FilterKeys, created.Namespace)
	}
	dereg := byType[structs.TypeJobDeregistered]
	if dereg.Payload["Deleted"] != true || dereg.Payload["Job"].(*structs.Job).ID != "j" {
		t.Errorf("purge payload: got %v, want the job and Deleted", dereg.Payload)
	}
	if !slices.Equal(rec.indexes, []uint64{1, 2, 3, 4}) {
		t.Errorf("published indexes: got %v, want [1 2 3 4]", rec.indexes)
	}
}

// TestEventsAfterRestore: a store restored from a snapshot keeps
// publishing; a store without a sink tracks nothing.
func TestEventsAfterRestore(t *testing.T) {
	src, _ := newTestFSM(t)
	populate(t, src)
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	buf := &bufferSink{}
	if err := snap.Persist(buf); err != nil {
		t.Fatal(err)
	}
	if got := src.State().TakeChanges(); got != nil {
		t.Errorf("a store without an event sink kept %d changes", len(got))
	}

	dst, _ := newTestFSM(t)
	rec := &sink{}
	dst.SetEventSink(rec)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	apply(t, dst, 7, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("after")})
	if got, want := rec.take(), []string{"Job JobRegistered after @7"}; !slices.Equal(got, want) {
		t.Errorf("after restore: got %q, want %q", got, want)
	}
}
