package fsm

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/structs"
)

// recorder is a Notifier that remembers what it was told.
type recorder struct {
	mu       sync.Mutex
	evals    []*structs.Evaluation
	capacity []uint64
}

func (r *recorder) EvalsUpserted(evals []*structs.Evaluation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evals = append(r.evals, evals...)
}

func (r *recorder) CapacityChanged(index uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.capacity = append(r.capacity, index)
}

// take returns and clears what was recorded: the IDs of the evals with
// their ModifyIndex, and the capacity-change indexes.
func (r *recorder) take() (evals []string, capacity []uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.evals {
		evals = append(evals, fmt.Sprintf("%s@%d", e.ID, e.ModifyIndex))
	}
	capacity = r.capacity
	r.evals, r.capacity = nil, nil
	return evals, capacity
}

func newTestFSM(t *testing.T) (*FSM, *recorder) {
	t.Helper()
	rec := &recorder{}
	f, err := New(nil, rec)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f, rec
}

func logEntry(t *testing.T, index uint64, typ structs.MessageType, msg any) *raft.Log {
	t.Helper()
	data, err := structs.Encode(typ, msg)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
}

func apply(t *testing.T, f *FSM, index uint64, typ structs.MessageType, msg any) {
	t.Helper()
	if resp := f.Apply(logEntry(t, index, typ, msg)); resp != nil {
		t.Fatalf("apply %d at %d: %v", typ, index, resp)
	}
}

func testNode(id string) *structs.Node {
	return &structs.Node{ID: id, Name: "n-" + id, Datacenter: "dc1", Status: structs.NodeStatusReady,
		Attributes: map[string]string{"kernel.name": "linux"}}
}

func testJob(id string) *structs.Job {
	j := &structs.Job{ID: id, Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep"}}}}}}
	j.Canonicalize()
	return j
}

func testEval(id, jobID, status string) *structs.Evaluation {
	return &structs.Evaluation{ID: id, Namespace: structs.DefaultNamespace, JobID: jobID,
		Type: structs.JobTypeService, Status: status, TriggeredBy: structs.EvalTriggerJobRegister}
}

func testAlloc(id string, job *structs.Job, nodeID string) *structs.Allocation {
	return &structs.Allocation{ID: id, Namespace: job.Namespace, JobID: job.ID, Job: job, TaskGroup: "web",
		NodeID: nodeID, EvalID: "e1", Name: structs.AllocName(job.ID, "web", 0), DesiredStatus: structs.AllocDesiredStatusRun}
}

func checkNotified(t *testing.T, rec *recorder, wantEvals []string, wantCapacity []uint64) {
	t.Helper()
	gotEvals, gotCapacity := rec.take()
	if !slices.Equal(gotEvals, wantEvals) {
		t.Errorf("EvalsUpserted: got %v, want %v", gotEvals, wantEvals)
	}
	if !slices.Equal(gotCapacity, wantCapacity) {
		t.Errorf("CapacityChanged: got %v, want %v", gotCapacity, wantCapacity)
	}
}

func TestApplyNodes(t *testing.T) {
	f, rec := newTestFSM(t)
	apply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{
		Node: testNode("n1"), Evals: []*structs.Evaluation{testEval("e1", "j", structs.EvalStatusPending)}})
	n, _ := f.State().NodeByID(nil, "n1")
	if n == nil || n.CreateIndex != 1 {
		t.Fatalf("registered node: got %+v", n)
	}
	checkNotified(t, rec, []string{"e1@1"}, []uint64{1})

	apply(t, f, 2, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusReady, UpdatedAt: 10})
	checkNotified(t, rec, nil, nil) // a heartbeat changes no capacity

	apply(t, f, 3, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusDown, UpdatedAt: 20,
		Evals: []*structs.Evaluation{testEval("e2", "j", structs.EvalStatusPending)}})
	n, _ = f.State().NodeByID(nil, "n1")
	if n.Status != structs.NodeStatusDown || n.StatusUpdatedAt != 20 {
		t.Errorf("node after down: got %s %d", n.Status, n.StatusUpdatedAt)
	}
	checkNotified(t, rec, []string{"e2@3"}, nil)

	apply(t, f, 4, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusReady, UpdatedAt: 30})
	checkNotified(t, rec, nil, []uint64{4})

	resp := f.Apply(logEntry(t, 5, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "ghost", Status: structs.NodeStatusReady}))
	if err, _ := resp.(error); !errors.Is(err, structs.ErrUnknownNode) {
		t.Errorf("unknown node: got %v, want ErrUnknownNode", resp)
	}

	apply(t, f, 6, structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeID: "n1"})
	if n, _ := f.State().NodeByID(nil, "n1"); n != nil {
		t.Errorf("node still there after deregister")
	}
}

func TestApplyJobs(t *testing.T) {
	f, rec := newTestFSM(t)
	apply(t, f, 1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{
		Job: testJob("j"), Eval: testEval("e1", "j", structs.EvalStatusPending)})
	j, _ := f.State().JobByID(nil, "default", "j")
	if j == nil || j.Status != structs.JobStatusPending || j.Version != 0 {
		t.Fatalf("registered job: got %+v", j)
	}
	if e, _ := f.State().EvalByID(nil, "e1"); e == nil || e.CreateIndex != 1 {
		t.Errorf("register eval: got %+v", e)
	}
	checkNotified(t, rec, []string{"e1@1"}, nil)

	tests := []struct {
		name      string
		purge     bool
		wantJob   bool
		wantStop  bool
		wantVersn uint64
	}{
		{"stop", false, true, true, 1},
		{"purge", true, false, false, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index := uint64(2 + i)
			eval := testEval("d"+tt.name, "j", structs.EvalStatusPending)
			apply(t, f, index, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{
				JobID: "j", Purge: tt.purge, Eval: eval, WriteRequest: structs.WriteRequest{Namespace: "default"}})
			j, _ := f.State().JobByID(nil, "default", "j")
			if (j != nil) != tt.wantJob {
				t.Fatalf("job present: got %v, want %v", j != nil, tt.wantJob)
			}
			if j != nil && (j.Stop != tt.wantStop || j.Version != tt.wantVersn || j.Status != structs.JobStatusDead) {
				t.Errorf("job: got stop %v version %d status %s, want %v %d dead", j.Stop, j.Version, j.Status, tt.wantStop, tt.wantVersn)
			}
			checkNotified(t, rec, []string{fmt.Sprintf("%s@%d", eval.ID, index)}, nil)
		})
	}
}

func TestApplyEvalUpdate(t *testing.T) {
	f, rec := newTestFSM(t)
	apply(t, f, 1, structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{
		testEval("e1", "j", structs.EvalStatusBlocked), testEval("e2", "j", structs.EvalStatusComplete)}})
	evals, _ := f.State().EvalsByJob(nil, "default", "j")
	if len(evals) != 2 || evals[0].Status != structs.EvalStatusBlocked {
		t.Errorf("evals: got %d", len(evals))
	}
	checkNotified(t, rec, []string{"e1@1", "e2@1"}, nil)
}

func TestApplyPlanResultsAndClientUpdates(t *testing.T) {
	f, rec := newTestFSM(t)
	job := testJob("j")
	apply(t, f, 1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	a := testAlloc("a1", job, "n1")
	apply(t, f, 2, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{a}, EvalID: "e1"})
	got, _ := f.State().AllocByID(nil, "a1")
	if got == nil || got.ClientStatus != structs.AllocClientStatusPending || got.AllocModifyIndex != 2 {
		t.Fatalf("placed alloc: got %+v", got)
	}
	checkNotified(t, rec, nil, nil) // a placement frees nothing

	tests := []struct {
		name         string
		status       string
		wantCapacity bool
	}{
		{"running", structs.AllocClientStatusRunning, false},
		{"failed", structs.AllocClientStatusFailed, true},
		{"failed again", structs.AllocClientStatusFailed, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index := uint64(3 + i)
			u := &structs.Allocation{ID: "a1", NodeID: "n1", JobID: "j", Namespace: "default", ClientStatus: tt.status,
				TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning}}}
			retry := testEval(fmt.Sprintf("r%d", index), "j", structs.EvalStatusPending)
			apply(t, f, index, structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{
				Alloc: []*structs.Allocation{u}, Evals: []*structs.Evaluation{retry}})
			got, _ := f.State().AllocByID(nil, "a1")
			if got.ClientStatus != tt.status || got.TaskStates["t"] == nil {
				t.Errorf("alloc: got status %s tasks %v", got.ClientStatus, got.TaskStates)
			}
			var wantCap []uint64
			if tt.wantCapacity {
				wantCap = []uint64{index}
			}
			checkNotified(t, rec, []string{fmt.Sprintf("%s@%d", retry.ID, index)}, wantCap)
		})
	}

	stop := a.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	apply(t, f, 8, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{stop}})
	checkNotified(t, rec, nil, []uint64{8})
	got, _ = f.State().AllocByID(nil, "a1")
	if got.DesiredStatus != structs.AllocDesiredStatusStop || got.ClientStatus != structs.AllocClientStatusFailed {
		t.Errorf("stopped alloc: got desired %s client %s", got.DesiredStatus, got.ClientStatus)
	}
}

func TestApplyUnknownTypes(t *testing.T) {
	f, _ := newTestFSM(t)
	const unknown structs.MessageType = 99
	t.Run("ignored with the flag", func(t *testing.T) {
		entry := logEntry(t, 1, unknown|structs.IgnoreUnknownTypeFlag, struct{}{})
		if resp := f.Apply(entry); resp != nil {
			t.Errorf("got %v, want nil", resp)
		}
		if idx, _ := f.State().LatestIndex(); idx != 0 {
			t.Errorf("state changed: index %d", idx)
		}
	})
	t.Run("known type with the flag is applied", func(t *testing.T) {
		apply(t, f, 2, structs.NodeRegisterRequestType|structs.IgnoreUnknownTypeFlag, &structs.NodeRegisterRequest{Node: testNode("n1")})
		if n, _ := f.State().NodeByID(nil, "n1"); n == nil {
			t.Error("node not registered")
		}
	})
	t.Run("panics without the flag", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("no panic for an unknown type")
			}
		}()
		f.Apply(logEntry(t, 3, unknown, struct{}{}))
	})
	t.Run("undecodable body is an error", func(t *testing.T) {
		entry := &raft.Log{Index: 4, Data: []byte{byte(structs.JobRegisterRequestType), 0xc1}}
		if _, ok := f.Apply(entry).(error); !ok {
			t.Error("want an error")
		}
	})
}
