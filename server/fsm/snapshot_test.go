package fsm

import (
	"bytes"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// bufferSink is a raft.SnapshotSink over memory.
type bufferSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *bufferSink) ID() string    { return "test" }
func (s *bufferSink) Cancel() error { s.cancelled = true; return nil }
func (s *bufferSink) Close() error  { s.closed = true; return nil }

// populate applies one of every write through f.
func populate(t *testing.T, f *FSM) {
	t.Helper()
	node := testNode("n1")
	node.NodeResources = &structs.NodeResources{
		Cpu:    structs.NodeCpuResources{CpuShares: 8000, TotalCpuCores: 8},
		Memory: structs.NodeMemoryResources{MemoryMB: 16384},
		Devices: []*structs.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
			Attributes: map[string]string{"memory": "80 GiB"},
			Instances: []*structs.NodeDevice{{ID: "GPU-1", Healthy: true, Locality: &structs.NodeDeviceLocality{PciBusID: "0000:01:00.0"},
				Links: map[string]string{"GPU-2": structs.LinkNVLink}}}}},
	}
	apply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	job := testJob("j")
	apply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: testEval("e1", "j", structs.EvalStatusPending)})
	other := testJob("k")
	other.Namespace = "team"
	apply(t, f, 3, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: other})
	a := testAlloc("a1", job, "n1")
	a.AllocatedResources = &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
		"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Devices: []*structs.AllocatedDeviceResource{
			{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"GPU-1"}}}}}}
	apply(t, f, 4, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{a}})
	apply(t, f, 5, structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{
		ID: "a1", ClientStatus: structs.AllocClientStatusRunning,
		TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: time.Unix(7, 0).UTC(),
			Events: []*structs.TaskEvent{{Type: structs.TaskStarted, Time: 7}}}}}}})
	done := testEval("e1", "j", structs.EvalStatusComplete)
	done.QueuedAllocations = map[string]int{"web": 0}
	apply(t, f, 6, structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{done}})
	apply(t, f, 6, structs.ApplyPlanResultsDeploymentRequestType, &structs.ApplyPlanResultsRequest{EvalID: "e1",
		Deployment: testDeployment("d1", job)})
}

// testDeployment is a running deployment of job's group web, one
// canary wanted.
func testDeployment(id string, job *structs.Job) *structs.Deployment {
	d := structs.NewDeployment(job, 1)
	d.ID = id
	d.TaskGroups["web"] = &structs.DeploymentState{DesiredTotal: 1, DesiredCanaries: 1, ProgressDeadline: time.Minute}
	return d
}

// dump reads everything from a store, for comparison.
type dump struct {
	Nodes   []*structs.Node
	Jobs    []*structs.Job
	Evals   []*structs.Evaluation
	Allocs  []*structs.Allocation
	Indexes map[string]uint64
	// Versions are the stored job versions (job_version.go).
	Versions []*structs.Job
	// Deployments are newest first (deployment.go).
	Deployments []*structs.Deployment
}

func dumpState(t *testing.T, s *state.StateStore) dump {
	t.Helper()
	var d dump
	var err error
	if d.Nodes, err = s.Nodes(nil); err != nil {
		t.Fatal(err)
	}
	if d.Jobs, err = s.Jobs(nil, "*"); err != nil {
		t.Fatal(err)
	}
	if d.Evals, err = s.Evals(nil, "*"); err != nil {
		t.Fatal(err)
	}
	if d.Allocs, err = s.Allocs(nil, "*"); err != nil {
		t.Fatal(err)
	}
	if d.Indexes, err = s.Indexes(); err != nil {
		t.Fatal(err)
	}
	if d.Versions, err = s.AllJobVersions(); err != nil {
		t.Fatal(err)
	}
	if d.Deployments, err = s.Deployments(nil, "*", ""); err != nil {
		t.Fatal(err)
	}
	return d
}

func persist(t *testing.T, f *FSM) *bufferSink {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release()
	sink := &bufferSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink: closed %v cancelled %v, want closed", sink.closed, sink.cancelled)
	}
	return sink
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	src, _ := newTestFSM(t)
	populate(t, src)
	want := dumpState(t, src.State())

	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Writes after Snapshot must not leak into what Persist writes.
	apply(t, src, 7, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("late")})
	sink := &bufferSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}

	dst, _ := newTestFSM(t)
	before := dst.State()
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	got := dumpState(t, dst.State())
	if !reflect.DeepEqual(got, want) {
		t.Errorf("restored state differs:\n got %+v\nwant %+v", got, want)
	}
	if len(got.Nodes) != 1 || len(got.Jobs) != 2 || len(got.Allocs) != 1 || got.Indexes[state.TableAllocs] != 5 {
		t.Errorf("restored counts: nodes %d jobs %d allocs %d alloc index %d", len(got.Nodes), len(got.Jobs), len(got.Allocs), got.Indexes[state.TableAllocs])
	}
	if dst.State() == before {
		t.Error("State() still returns the old store")
	}
	select {
	case <-before.AbandonCh():
	default:
		t.Error("old store not abandoned")
	}
	if sum, _ := dst.State().JobSummary(nil, "default", "j"); sum == nil || sum.Summary["web"].Running != 1 {
		t.Errorf("summary after restore: got %+v", sum)
	}
}

func TestRestoreRejectsBadStreams(t *testing.T) {
	src, _ := newTestFSM(t)
	populate(t, src)
	good := persist(t, src).Bytes()

	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated", good[:len(good)-3]},
		{"unknown record", append(bytes.Clone(good), 0x7f, 0x80)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newTestFSM(t)
			apply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("keep")})
			before := f.State()
			if err := f.Restore(io.NopCloser(bytes.NewReader(tt.data))); err == nil {
				t.Fatal("Restore: want an error")
			}
			if f.State() != before {
				t.Error("a failed restore replaced the state")
			}
			if n, _ := f.State().NodeByID(nil, "keep"); n == nil {
				t.Error("a failed restore lost the old state")
			}
		})
	}
}

// TestRealRaft runs the FSM under a single-node Raft, then starts a new
// Raft over the same log and snapshot stores with a fresh FSM, which must
// rebuild the same state from the snapshot plus the log after it.
func TestRealRaft(t *testing.T) {
	logs, stable, snaps := raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	start := func(f *FSM) (*raft.Raft, func()) {
		conf := raft.DefaultConfig()
		conf.LocalID = "s1"
		conf.Logger = hclog.NewNullLogger()
		conf.HeartbeatTimeout, conf.ElectionTimeout = 50*time.Millisecond, 50*time.Millisecond
		conf.LeaderLeaseTimeout, conf.CommitTimeout = 50*time.Millisecond, 5*time.Millisecond
		addr, trans := raft.NewInmemTransport("s1")
		r, err := raft.NewRaft(conf, f, logs, stable, snaps, trans)
		if err != nil {
			t.Fatalf("NewRaft: %v", err)
		}
		return r, func() {
			if err := r.Shutdown().Error(); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			_ = addr
		}
	}
	waitLeader := func(r *raft.Raft) {
		deadline := time.Now().Add(5 * time.Second)
		for r.State() != raft.Leader {
			if time.Now().After(deadline) {
				t.Fatal("no leader")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	raftApply := func(r *raft.Raft, typ structs.MessageType, msg any) {
		data, err := structs.Encode(typ, msg)
		if err != nil {
			t.Fatal(err)
		}
		fut := r.Apply(data, time.Second)
		if err := fut.Error(); err != nil {
			t.Fatalf("raft apply: %v", err)
		}
		if resp, ok := fut.Response().(error); ok {
			t.Fatalf("fsm apply: %v", resp)
		}
	}

	f1, rec := newTestFSM(t)
	r1, stop1 := start(f1)
	conf := raft.Configuration{Servers: []raft.Server{{ID: "s1", Address: "s1"}}}
	if err := r1.BootstrapCluster(conf).Error(); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	waitLeader(r1)
	raftApply(r1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("j"), Eval: testEval("e1", "j", structs.EvalStatusPending)})
	if err := r1.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	raftApply(r1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n1")})
	want := dumpState(t, f1.State())
	if evals, _ := rec.take(); len(evals) != 1 {
		t.Errorf("notified evals: got %v, want one", evals)
	}
	stop1()

	f2, _ := newTestFSM(t)
	r2, stop2 := start(f2)
	defer stop2()
	waitLeader(r2)
	if err := r2.Barrier(time.Second).Error(); err != nil {
		t.Fatalf("barrier: %v", err)
	}
	got := dumpState(t, f2.State())
	if !reflect.DeepEqual(got.Jobs, want.Jobs) || !reflect.DeepEqual(got.Evals, want.Evals) || !reflect.DeepEqual(got.Nodes, want.Nodes) {
		t.Errorf("rebuilt state differs:\n got %+v\nwant %+v", got, want)
	}
}
