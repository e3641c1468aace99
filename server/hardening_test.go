package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// TestServer_BadInputIsAnError sends, over TCP, requests that decode
// fine but hold nil where a pointer is expected. net/rpc does not recover
// panics, so a crash here would take the whole agent down (and a bad
// entry in the Raft log would crash every server on replay).
func TestServer_BadInputIsAnError(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 2)
	registerNode(t, c, node)
	registerJob(t, s, gpuJob("j", structs.JobTypeBatch, 1, 1))
	waitFor(t, 5*time.Second, func() (bool, string) { return len(liveAllocs(t, s, "j")) == 1, "not placed" })
	alloc := liveAllocs(t, s, "j")[0]

	nilInstance := gpuNode("n2", 1)
	nilInstance.NodeResources.Devices[0].Instances = append(nilInstance.NodeResources.Devices[0].Instances, nil)
	nilDriver := gpuNode("n3", 1)
	nilDriver.Drivers["exec"] = nil
	nilGroup := gpuJob("g", structs.JobTypeBatch, 1, 1)
	nilGroup.TaskGroups = append(nilGroup.TaskGroups, nil)
	nilConstraint := gpuJob("c", structs.JobTypeBatch, 1, 1)
	nilConstraint.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{nil}
	nilDevice := gpuJob("d", structs.JobTypeBatch, 1, 1)
	nilDevice.TaskGroups[0].Tasks[0].Resources.Devices = append(nilDevice.TaskGroups[0].Tasks[0].Resources.Devices, nil)

	tests := []struct {
		name   string
		method string
		args   any
		reply  any
	}{
		{"node with nil instance", structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: nilInstance}, &structs.NodeUpdateResponse{}},
		{"node with nil driver", structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: nilDriver}, &structs.NodeUpdateResponse{}},
		{"job with nil group", structs.RPCJobRegister, &structs.JobRegisterRequest{Job: nilGroup}, &structs.JobRegisterResponse{}},
		{"job with nil constraint", structs.RPCJobRegister, &structs.JobRegisterRequest{Job: nilConstraint}, &structs.JobRegisterResponse{}},
		{"job with nil device", structs.RPCJobRegister, &structs.JobRegisterRequest{Job: nilDevice}, &structs.JobRegisterResponse{}},
		{"plan job with nil group", structs.RPCJobPlan, &structs.JobPlanRequest{Job: nilGroup}, &structs.JobPlanResponse{}},
		{"nil alloc update", structs.RPCNodeUpdateAlloc, allocUpdate(t, s, []*structs.Allocation{nil}), &structs.GenericResponse{}},
		{"alloc update without ID", structs.RPCNodeUpdateAlloc, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{}}}, &structs.GenericResponse{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Call(tt.method, tt.args, tt.reply)
			if err == nil || !strings.Contains(err.Error(), structs.ErrInvalid.Error()) {
				t.Errorf("%s: got %v, want an invalid request error", tt.method, err)
			}
			if err := s.RPC(tt.method, tt.args, tt.reply); !errors.Is(err, structs.ErrInvalid) {
				t.Errorf("%s in process: got %v, want %v", tt.method, err, structs.ErrInvalid)
			}
		})
	}

	// Nil task states and events are dropped, the rest is stored.
	update := &structs.Allocation{ID: alloc.ID, ClientStatus: structs.AllocClientStatusRunning, TaskStates: map[string]*structs.TaskState{
		"t":    {State: structs.TaskStateRunning, Events: []*structs.TaskEvent{nil, {Type: structs.TaskStarted}}},
		"gone": nil,
	}}
	if err := c.Call(structs.RPCNodeUpdateAlloc, allocUpdate(t, s, []*structs.Allocation{update}), &structs.GenericResponse{}); err != nil {
		t.Fatalf("update with nil task state and event: %v", err)
	}
	got, err := s.State().AllocByID(nil, alloc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ClientStatus != structs.AllocClientStatusRunning || len(got.TaskStates) != 1 || len(got.TaskStates["t"].Events) != 1 {
		t.Errorf("stored alloc: status %s, task states %+v; want running with t's one event", got.ClientStatus, got.TaskStates)
	}
	if err := c.Call(structs.RPCStatusPing, struct{}{}, &struct{}{}); err != nil {
		t.Errorf("server unusable after bad input: %v", err)
	}
}

// TestServer_HeartbeatAtExpiryKeepsNodeUp: a heartbeat that re-armed the
// node's timer after it fired must stop the reaper from marking the node
// down.
func TestServer_HeartbeatAtExpiryKeepsNodeUp(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 1)
	registerNode(t, c, node) // arms the timer, as a heartbeat does

	if err := s.markNodeDown(node.ID); err != nil {
		t.Fatalf("markNodeDown: %v", err)
	}
	if n, _ := s.State().NodeByID(nil, node.ID); n.Status != structs.NodeStatusReady {
		t.Errorf("node status: got %s, want ready (it heartbeated)", n.Status)
	}

	// Without a heartbeat since the expiry, it does go down.
	s.heartbeats.stop(node.ID)
	if err := s.markNodeDown(node.ID); err != nil {
		t.Fatalf("markNodeDown: %v", err)
	}
	if n, _ := s.State().NodeByID(nil, node.ID); n.Status != structs.NodeStatusDown {
		t.Errorf("node status: got %s, want down", n.Status)
	}
}

// TestFollowLeadership checks the leader duties follow Raft's leader
// channel, which keeps only its latest value: a true while leading means
// leadership was lost and regained unseen, and the duties must restart.
func TestFollowLeadership(t *testing.T) {
	s := &Server{logger: hclog.NewNullLogger(), shutdownCh: make(chan struct{})}
	var mu sync.Mutex
	var events []string
	record := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	start := func() func() {
		record("start")
		return func() { record("stop") }
	}
	leaderCh := make(chan bool)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.followLeadership(leaderCh, start)
	}()
	for _, v := range []bool{true, true, false, false, true} {
		leaderCh <- v
	}
	close(s.shutdownCh)
	<-done
	want := []string{"start", "stop", "start", "stop", "start", "stop"}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(events, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", events, want)
	}
}

// TestServer_FailedEvalGetsFollowUp: an evaluation the broker gives up on
// is marked failed with a delayed follow-up, so its job is retried.
func TestServer_FailedEvalGetsFollowUp(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	// A type no worker dequeues, so the test is the only consumer.
	eval := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: structs.DefaultNamespace, Priority: 50,
		Type: "test-only", JobID: "j", Status: structs.EvalStatusPending, TriggeredBy: structs.EvalTriggerJobRegister}
	if err := s.upsertEvals(eval); err != nil {
		t.Fatal(err)
	}
	for range evalDeliveryLimit {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		e, token, err := s.broker.Dequeue(ctx, []string{"test-only"})
		cancel()
		if err != nil {
			t.Fatalf("Dequeue: %v", err)
		}
		if err := s.broker.Nack(e.ID, token); err != nil {
			t.Fatalf("Nack: %v", err)
		}
	}
	var failed *structs.Evaluation
	waitFor(t, 5*time.Second, func() (bool, string) {
		failed = evalByID(t, s, eval.ID)
		return failed.Status == structs.EvalStatusFailed && failed.NextEval != "", "eval " + failed.Status + ", no follow-up"
	})
	next := evalByID(t, s, failed.NextEval)
	if next == nil || next.Status != structs.EvalStatusPending || next.Wait != failedEvalFollowUpWait ||
		next.PreviousEval != eval.ID || next.JobID != "j" {
		t.Errorf("follow-up: got %+v, want pending, waiting %s, after %s", next, failedEvalFollowUpWait, eval.ID)
	}
	if st := s.broker.Stats(); st.TotalWaiting != 1 {
		t.Errorf("broker waiting: got %d, want the follow-up", st.TotalWaiting)
	}
}
