package fsm

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/structs"
)

// seedEntries returns one valid log entry per message type the FSM
// knows, built from structs, so the fuzzer starts from real shapes.
func seedEntries(tb testing.TB) map[structs.MessageType][]byte {
	tb.Helper()
	job := testJob("x")
	alloc := testAlloc("a2", testJob("j"), "n1")
	alloc.DesiredStatus = structs.AllocDesiredStatusStop
	placedWithoutJob := testAlloc("a3", testJob("j"), "n1")
	placedWithoutJob.Job = nil // takes the request's
	msgs := map[structs.MessageType]any{
		structs.NodeRegisterRequestType: &structs.NodeRegisterRequest{Node: testNode("n2"),
			Evals: []*structs.Evaluation{testEval("e9", "j", structs.EvalStatusPending)}},
		structs.NodeUpdateStatusRequestType:       &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusDown, UpdatedAt: 9},
		structs.NodeUpdateStatusLosingRequestType: &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusDown, UpdatedAt: 9},
		structs.NodeDeregisterRequestType:         &structs.NodeDeregisterRequest{NodeID: "n1"},
		structs.JobRegisterRequestType: &structs.JobRegisterRequest{Job: job, Eval: testEval("e8", "x", structs.EvalStatusPending),
			EnforceIndex: true},
		structs.JobDeregisterRequestType: &structs.JobDeregisterRequest{JobID: "j", Purge: true,
			WriteRequest: structs.WriteRequest{Namespace: structs.DefaultNamespace}},
		structs.EvalUpdateRequestType: &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{testEval("e1", "j", structs.EvalStatusBlocked)}},
		structs.AllocClientUpdateRequestType: &structs.AllocUpdateRequest{NodeID: "n1",
			Alloc: []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusComplete}}},
		structs.ApplyPlanResultsRequestType: &structs.ApplyPlanResultsRequest{Allocs: []*structs.Allocation{alloc}, EvalID: "e1",
			EvalUpdate: testEval("e1", "j", structs.EvalStatusComplete), Namespace: structs.DefaultNamespace, JobID: "j",
			Reservation: &structs.Reservation{Namespace: structs.DefaultNamespace, JobID: "j", Nodes: []string{"n1"}, Counts: map[string]int{"web": 1}, GPUs: 1}},
		structs.ApplyPlanResultsJobOnceRequestType: &structs.ApplyPlanResultsRequest{Job: testJob("j"),
			AllocsStopped: []*structs.Allocation{alloc}, AllocsPlaced: []*structs.Allocation{placedWithoutJob}, EvalID: "e1"},
		structs.SchedulerConfigRequestType: setSchedConfig(structs.SchedulerAlgorithmSpread, true, 0),
		structs.NamespaceUpsertRequestType: &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team", Quota: "q"}}},
		structs.NamespaceDeleteRequestType: &structs.NamespaceDeleteRequest{Namespaces: []string{"empty"}},
		structs.QuotaUpsertRequestType:     &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{gpuQuota("q", 4)}},
		structs.QuotaDeleteRequestType:     &structs.QuotaSpecDeleteRequest{Names: []string{"q"}},
		structs.QueueUpsertRequestType:     &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "research", Weight: 2, GuaranteedGPUs: 1}},
		structs.QueueDeleteRequestType:     &structs.QueueDeleteRequest{Name: "research"},
		structs.VariableUpsertRequestType: &structs.VariableUpsertEntry{Var: &structs.VariableEncrypted{
			VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: "nomad/jobs/j"},
			KeyID:            "k1", Nonce: []byte("123456789012"), Data: []byte("sealed")}},
		structs.VariableDeleteRequestType:    &structs.VariableDeleteEntry{Namespace: "default", Path: "nomad/jobs/j"},
		structs.RootKeyMetaUpsertRequestType: &structs.RootKeyMetaUpsertRequest{Meta: &structs.RootKeyMeta{KeyID: "k1", Algorithm: "aes256-gcm", State: structs.RootKeyStateActive}},
		structs.ACLPolicyUpsertRequestType: &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "ro",
			Rules: `namespace "default" { policy = "read" }`}}},
		structs.ACLPolicyDeleteRequestType: &structs.ACLPolicyDeleteRequest{Names: []string{"ro"}},
		structs.ACLTokenUpsertRequestType: &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{AccessorID: "acc", SecretID: "sec",
			Type: structs.ACLClientToken, Policies: []string{"ro"}}}},
		structs.ACLTokenDeleteRequestType: &structs.ACLTokenDeleteRequest{AccessorIDs: []string{"acc"}},
		structs.ACLTokenBootstrapType: &structs.ACLTokenBootstrapRequest{Token: &structs.ACLToken{AccessorID: "root", SecretID: "s",
			Type: structs.ACLManagementToken, Global: true}},
		structs.ServiceRegistrationUpsertRequestType: &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{{
			ID: "_nomad-task-a1-web", ServiceName: "web", Namespace: structs.DefaultNamespace, NodeID: "n1", JobID: "j", AllocID: "a1",
			Address: "10.0.0.1", Port: 8080}}},
		structs.ServiceRegistrationDeleteByIDRequestType: &structs.ServiceRegistrationDeleteByIDRequest{ID: "_nomad-task-a1-web",
			WriteRequest: structs.WriteRequest{Namespace: structs.DefaultNamespace}},
		structs.ServiceRegistrationDeleteByAllocRequestType: &structs.ServiceRegistrationDeleteByAllocRequest{AllocIDs: []string{"a1"}},
		structs.PeriodicLaunchUpsertRequestType: &structs.PeriodicLaunchUpsertRequest{Launch: &structs.PeriodicLaunch{
			Namespace: structs.DefaultNamespace, ID: "x", Launch: time.Unix(1_790_000_000, 0)}},
		structs.GarbageCollectRequestType: &structs.GarbageCollectRequest{Jobs: []structs.GCJob{{Namespace: structs.DefaultNamespace, ID: "j", ModifyIndex: 2}},
			Evals: []string{"e1"}, Allocs: []string{"a1"}, Nodes: []structs.GCNode{{ID: "n1", ModifyIndex: 1}}},
		structs.ApplyPlanResultsDeploymentRequestType: &structs.ApplyPlanResultsRequest{EvalID: "e1", Namespace: structs.DefaultNamespace, JobID: "j",
			Deployment:        testDeployment("d2", testJob("j")),
			DeploymentUpdates: []*structs.DeploymentStatusUpdate{{DeploymentID: "d1", Status: structs.DeploymentStatusCancelled}}},
		structs.DeploymentStatusUpdateRequestType: &structs.DeploymentStatusUpdateRequest{MarkStable: true, Job: testJob("j"),
			DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "d1", Status: structs.DeploymentStatusSuccessful},
			Eval:             testEval("e7", "j", structs.EvalStatusPending)},
		structs.DeploymentPromoteRequestType: &structs.DeploymentPromoteRequest{DeploymentID: "d1", All: true,
			Eval: testEval("e6", "j", structs.EvalStatusPending)},
		structs.JobStabilityRequestType: &structs.JobStabilityRequest{JobID: "j", JobVersion: 0, Stable: true,
			WriteRequest: structs.WriteRequest{Namespace: structs.DefaultNamespace}},
		structs.NodeUpdateEligibilityRequestType: &structs.NodeUpdateEligibilityRequest{NodeID: "n1",
			Eligibility: structs.NodeSchedulingIneligible, UpdatedAt: 9},
	}
	out := make(map[structs.MessageType][]byte, len(msgs))
	for typ, msg := range msgs {
		b, err := structs.Encode(typ, msg)
		if err != nil {
			tb.Fatalf("encode %d: %v", typ, err)
		}
		out[typ] = b
	}
	return out
}

// TestSeedEntriesCoverEveryType keeps the fuzz seeds complete: a message
// type the FSM learns must get a seed, and every seed must apply.
func TestSeedEntriesCoverEveryType(t *testing.T) {
	f, _ := newTestFSM(t)
	seeds := seedEntries(t)
	for typ := range 128 {
		_, seeded := seeds[structs.MessageType(typ)]
		if known := f.handler(structs.MessageType(typ)) != nil; known != seeded {
			t.Errorf("type %d: known to the FSM %v, seeded %v", typ, known, seeded)
		}
	}
	for typ, data := range seeds {
		g := fuzzFSM(t, io.Discard)
		if resp := g.Apply(&raft.Log{Index: 100, Data: data}); resp != nil {
			t.Errorf("seed %d: %v", typ, resp)
		}
	}
}

// panicLog records whether the FSM logged a panic it recovered.
type panicLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *panicLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *panicLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// fuzzFSM is a populated FSM (populate, and what the seeds delete) that
// logs into l.
func fuzzFSM(t *testing.T, l io.Writer) *FSM {
	f, err := New(hclog.New(&hclog.LoggerOptions{Output: l, Level: hclog.Warn}), &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	populate(t, f)
	apply(t, f, 10, structs.QuotaUpsertRequestType, &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{gpuQuota("q", 8)}})
	apply(t, f, 11, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team"}, {Name: "empty"}}})
	apply(t, f, 12, structs.QueueUpsertRequestType, &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "research", Weight: 1}})
	apply(t, f, 13, structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "ro",
		Rules: `namespace "default" { policy = "read" }`}}})
	apply(t, f, 14, structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{AccessorID: "acc",
		SecretID: "sec0", Type: structs.ACLClientToken, Policies: []string{"ro"}}}})
	apply(t, f, 15, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{{
		ID: "_nomad-task-a1-web", ServiceName: "web", Namespace: structs.DefaultNamespace, NodeID: "n1", JobID: "j", AllocID: "a1"}}})
	return f
}

// applyResult applies data at index 100 and reports the result, or the
// panic that escaped Apply.
func applyResult(f *FSM, data []byte) (resp any, panicked any) {
	defer func() { panicked = recover() }()
	return f.Apply(&raft.Log{Index: 100, Term: 1, Type: raft.LogCommand, Data: data}), nil
}

// FuzzApply feeds arbitrary log entries (a type byte and a msgpack body)
// to Apply on a populated FSM. For a type the FSM knows, Apply must
// return nil or an error, never panic, never stop on a panic it recovered
// (a bug the recovery hides), and give the same answer on a second
// server; the FSM must apply the next entry afterwards. A type it does
// not know must panic unless the entry carries IgnoreUnknownTypeFlag:
// that is the design (a server that cannot apply what its peers applied
// must stop, not diverge), and only the leader's endpoints choose types.
func FuzzApply(f *testing.F) {
	for _, data := range seedEntries(f) {
		f.Add(data)
	}
	f.Add([]byte{})
	f.Add([]byte{byte(structs.JobRegisterRequestType), 0xc1})
	f.Add([]byte{byte(structs.JobRegisterRequestType), 0xdd, 0x7f, 0xff, 0xff, 0xff})
	f.Add(append([]byte{byte(structs.EvalUpdateRequestType), 0x81, 0xa5, 'E', 'v', 'a', 'l', 's'}, bytes.Repeat([]byte{0x91}, 2000)...))
	f.Add([]byte{99 | byte(structs.IgnoreUnknownTypeFlag), 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		var log1, log2 panicLog
		f1, f2 := fuzzFSM(t, &log1), fuzzFSM(t, &log2)
		known := len(data) > 0 && f1.handler(structs.MessageType(data[0])&^structs.IgnoreUnknownTypeFlag) != nil
		resp1, p1 := applyResult(f1, data)
		switch {
		case len(data) > 0 && !known && data[0]&byte(structs.IgnoreUnknownTypeFlag) == 0:
			if p1 == nil || !strings.Contains(fmt.Sprint(p1), "unknown message type") {
				t.Fatalf("unknown type %d: got %v, panic %v; want the unknown-type panic", data[0], resp1, p1)
			}
			return
		case p1 != nil:
			t.Fatalf("Apply panicked: %v", p1)
		case strings.Contains(log1.String(), "panic"):
			t.Fatalf("Apply recovered from a panic: %s", log1.String())
		}
		if resp1 != nil {
			if _, ok := resp1.(error); !ok {
				t.Fatalf("Apply returned %T %v, want nil or an error", resp1, resp1)
			}
		}
		resp2, _ := applyResult(f2, data)
		if fmt.Sprint(resp1) != fmt.Sprint(resp2) {
			t.Fatalf("two servers disagree: %v and %v", resp1, resp2)
		}
		next := logEntry(t, 101, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("after")})
		if resp := f1.Apply(next); resp != nil {
			t.Fatalf("next entry after the fuzzed one: %v", resp)
		}
	})
}

// seedSnapshot is a snapshot of an FSM that applied every seed entry.
func seedSnapshot(tb testing.TB) []byte {
	tb.Helper()
	f, err := New(nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	seeds := seedEntries(tb)
	for typ := range 256 {
		if data, ok := seeds[structs.MessageType(typ)]; ok {
			_ = f.Apply(&raft.Log{Index: uint64(typ) + 1, Data: data})
		}
	}
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	sink := &bufferSink{}
	if err := snap.Persist(sink); err != nil {
		tb.Fatal(err)
	}
	return sink.Bytes()
}

// FuzzRestore feeds arbitrary bytes to Restore as a snapshot stream. It
// must return nil or an error, never panic; after an error the FSM keeps
// its state and still applies entries.
func FuzzRestore(f *testing.F) {
	f.Add(seedSnapshot(f))
	f.Add([]byte{})
	f.Add([]byte{0x82, 0xa7, 'V', 'e', 'r', 's', 'i', 'o', 'n', 0x01, 0xa9, 'L', 'a', 's', 't', 'I', 'n', 'd', 'e', 'x', 0x05, byte(jobRecord), 0xdd, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		g, _ := newTestFSM(t)
		apply(t, g, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("before")})
		before := g.State()
		err := g.Restore(io.NopCloser(bytes.NewReader(data)))
		if err != nil && g.State() != before {
			t.Fatalf("a failed restore (%v) replaced the state", err)
		}
		next := logEntry(t, 1000, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("after")})
		if resp := g.Apply(next); resp != nil {
			t.Fatalf("entry after restore (err %v): %v", err, resp)
		}
	})
}
