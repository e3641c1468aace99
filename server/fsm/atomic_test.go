package fsm

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestApplyIsOneTransaction applies entries whose second half is invalid
// (an evaluation without an ID): the first half must not be visible
// either, and nothing is notified.
func TestApplyIsOneTransaction(t *testing.T) {
	bad := []*structs.Evaluation{{JobID: "j", Status: structs.EvalStatusPending}}
	tests := []struct {
		name  string
		typ   structs.MessageType
		msg   any
		check func(t *testing.T, f *FSM)
	}{
		{
			name: "job register", typ: structs.JobRegisterRequestType,
			msg: &structs.JobRegisterRequest{Job: testJob("new"), Eval: bad[0]},
			check: func(t *testing.T, f *FSM) {
				if j, _ := f.State().JobByID(nil, "", "new"); j != nil {
					t.Error("job visible without its eval")
				}
			},
		},
		{
			name: "job deregister", typ: structs.JobDeregisterRequestType,
			msg: &structs.JobDeregisterRequest{JobID: "j", Eval: bad[0]},
			check: func(t *testing.T, f *FSM) {
				if j, _ := f.State().JobByID(nil, "", "j"); j == nil || j.Stop {
					t.Errorf("job stopped without its eval: %+v", j)
				}
			},
		},
		{
			name: "node register", typ: structs.NodeRegisterRequestType,
			msg: &structs.NodeRegisterRequest{Node: testNode("n2"), Evals: bad},
			check: func(t *testing.T, f *FSM) {
				if n, _ := f.State().NodeByID(nil, "n2"); n != nil {
					t.Error("node visible without its evals")
				}
			},
		},
		{
			name: "node status", typ: structs.NodeUpdateStatusRequestType,
			msg: &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusDown, Evals: bad},
			check: func(t *testing.T, f *FSM) {
				if n, _ := f.State().NodeByID(nil, "n1"); n.Status != structs.NodeStatusReady {
					t.Errorf("node status %s without its evals", n.Status)
				}
			},
		},
		{
			name: "alloc client update", typ: structs.AllocClientUpdateRequestType,
			msg: &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusFailed}}, Evals: bad},
			check: func(t *testing.T, f *FSM) {
				if a, _ := f.State().AllocByID(nil, "a1"); a.ClientStatus == structs.AllocClientStatusFailed {
					t.Error("alloc failed without its evals")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, rec := newTestFSM(t)
			job := testJob("j")
			apply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n1")})
			apply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
			apply(t, f, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{testAlloc("a1", job, "n1")}})
			rec.take()

			if _, ok := f.Apply(logEntry(t, 4, tt.typ, tt.msg)).(error); !ok {
				t.Fatal("want an error")
			}
			tt.check(t, f)
			if idx, _ := f.State().LatestIndex(); idx != 3 {
				t.Errorf("LatestIndex: got %d, want 3", idx)
			}
			checkNotified(t, rec, nil, nil)
		})
	}
}

func TestApplyBadDataIsAnErrorNotACrash(t *testing.T) {
	f, _ := newTestFSM(t)
	node := testNode("n1")
	node.NodeResources = &structs.NodeResources{Devices: []*structs.NodeDeviceResource{{
		Vendor: "nvidia", Type: "gpu", Name: "x", Instances: []*structs.NodeDevice{nil},
	}}}
	resp := f.Apply(logEntry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}))
	if _, ok := resp.(error); !ok {
		t.Fatalf("got %v, want an error", resp)
	}
	if n, _ := f.State().NodeByID(nil, "n1"); n != nil {
		t.Error("node stored from a failed entry")
	}
	// The FSM still works.
	apply(t, f, 2, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n2")})
}

func TestRestoreReportsCapacityChange(t *testing.T) {
	src, _ := newTestFSM(t)
	populate(t, src)
	last, err := src.State().LatestIndex()
	if err != nil {
		t.Fatal(err)
	}
	dst, rec := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src).Bytes()))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	_, capacity := rec.take()
	if !slices.Equal(capacity, []uint64{last}) {
		t.Errorf("CapacityChanged: got %v, want [%d]", capacity, last)
	}
}
