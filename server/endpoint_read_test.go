package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// readFixture is one server with a node of 4 GPUs and a batch job "web"
// whose single allocation holds one of them.
type readFixture struct {
	s     *Server
	node  *structs.Node
	alloc *structs.Allocation
}

func newReadFixture(t *testing.T) *readFixture {
	t.Helper()
	s := startServer(t, testConfig(t))
	node := gpuNode("gpu-1", 4)
	registerNode(t, dialRPC(t, s.RPCAddr()), node)
	registerJob(t, s, gpuJob("web", structs.JobTypeBatch, 1, 1))
	waitFor(t, 10*time.Second, func() (bool, string) {
		return len(liveAllocs(t, s, "web")) == 1, "job web not placed"
	})
	return &readFixture{s: s, node: node, alloc: liveAllocs(t, s, "web")[0]}
}

// settle waits until the server has no evaluation left to process and
// its state has stopped changing, so that a blocking read sees only the
// change a test makes.
func settle(t *testing.T, s *Server) {
	t.Helper()
	last := uint64(0)
	waitFor(t, 10*time.Second, func() (bool, string) {
		st := s.broker.Stats()
		busy := st.TotalReady + st.TotalUnacked + st.TotalWaiting + st.TotalJobBlocked
		evals, err := s.State().Evals(nil, "*")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evals {
			if e.Status == structs.EvalStatusPending {
				busy++
			}
		}
		idx, _ := s.State().LatestIndex()
		quiet := busy == 0 && idx == last
		last = idx
		if !quiet {
			time.Sleep(20 * time.Millisecond)
		}
		return quiet, fmt.Sprintf("server still busy: %d evals in flight, state at %d", busy, idx)
	})
}

// call calls method in process and fails the test on an error.
func call(t *testing.T, s *Server, method string, args, reply any) {
	t.Helper()
	if err := s.RPC(method, args, reply); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// replyIndex returns the Index of a reply that embeds QueryMeta.
func replyIndex(reply any) uint64 {
	return reflect.ValueOf(reply).Elem().FieldByName("Index").Uint()
}

// touchAlloc changes what the client reports of alloc, so the
// allocations' table and the allocation's ModifyIndex move on.
func touchAlloc(t *testing.T, s *Server, alloc *structs.Allocation, desc string) {
	t.Helper()
	u := &structs.Allocation{ID: alloc.ID, Namespace: alloc.Namespace, NodeID: alloc.NodeID, JobID: alloc.JobID,
		ClientStatus: structs.AllocClientStatusPending, ClientDescription: desc}
	call(t, s, structs.RPCNodeUpdateAlloc, allocUpdate(t, s, []*structs.Allocation{u}), &structs.GenericResponse{})
}

// TestReads_BlockingQueries: every read blocks while nothing it reads
// changes, answers its index unchanged when MaxQueryTime passes, and
// wakes with a higher index when what it read changes.
func TestReads_BlockingQueries(t *testing.T) {
	f := newReadFixture(t)
	s := f.s
	q := func(min uint64, wait time.Duration) structs.QueryOptions {
		return structs.QueryOptions{MinQueryIndex: min, MaxQueryTime: wait}
	}
	var evalID string
	jobs := 0
	newJob := func() { jobs++; registerJob(t, s, gpuJob(fmt.Sprintf("more-%d", jobs), structs.JobTypeBatch, 1, 0)) }
	touch := func() { touchAlloc(t, s, f.alloc, time.Now().String()) }
	tests := []struct {
		name   string
		method string
		args   func(q structs.QueryOptions) any
		reply  func() any
		change func()
	}{
		{"job list", structs.RPCJobList, func(q structs.QueryOptions) any { return &structs.JobListRequest{QueryOptions: q} },
			func() any { return &structs.JobListResponse{} }, newJob},
		{"job", structs.RPCJobGetJob, func(q structs.QueryOptions) any { return &structs.JobSpecificRequest{JobID: "web", QueryOptions: q} },
			func() any { return &structs.SingleJobResponse{} }, func() {
				job := gpuJob("web", structs.JobTypeBatch, 1, 1)
				job.Meta = map[string]string{"at": time.Now().String()}
				registerJob(t, s, job)
			}},
		{"job allocations", structs.RPCJobAllocations, func(q structs.QueryOptions) any { return &structs.JobSpecificRequest{JobID: "web", QueryOptions: q} },
			func() any { return &structs.JobAllocationsResponse{} }, touch},
		{"job evaluations", structs.RPCJobEvaluations, func(q structs.QueryOptions) any { return &structs.JobSpecificRequest{JobID: "web", QueryOptions: q} },
			func() any { return &structs.JobEvaluationsResponse{} }, func() { registerJob(t, s, gpuJob("web", structs.JobTypeBatch, 1, 1)) }},
		{"job summary", structs.RPCJobSummary, func(q structs.QueryOptions) any { return &structs.JobSpecificRequest{JobID: "web", QueryOptions: q} },
			func() any { return &structs.JobSummaryResponse{} }, touch},
		{"alloc list", structs.RPCAllocList, func(q structs.QueryOptions) any { return &structs.AllocListRequest{QueryOptions: q} },
			func() any { return &structs.AllocListResponse{} }, touch},
		{"alloc", structs.RPCAllocGetAlloc, func(q structs.QueryOptions) any {
			return &structs.AllocSpecificRequest{AllocID: f.alloc.ID, QueryOptions: q}
		},
			func() any { return &structs.SingleAllocResponse{} }, touch},
		{"eval list", structs.RPCEvalList, func(q structs.QueryOptions) any { return &structs.EvalListRequest{QueryOptions: q} },
			func() any { return &structs.EvalListResponse{} }, newJob},
		{"eval", structs.RPCEvalGetEval, func(q structs.QueryOptions) any { return &structs.EvalSpecificRequest{EvalID: evalID, QueryOptions: q} },
			func() any { return &structs.SingleEvalResponse{} }, func() { updateEval(t, s, evalID) }},
		{"eval allocations", structs.RPCEvalAllocations, func(q structs.QueryOptions) any {
			return &structs.EvalSpecificRequest{EvalID: f.alloc.EvalID, QueryOptions: q}
		},
			func() any { return &structs.EvalAllocationsResponse{} }, touch},
		{"node list", structs.RPCNodeList, func(q structs.QueryOptions) any { return &structs.NodeListRequest{QueryOptions: q} },
			func() any { return &structs.NodeListResponse{} }, func() { registerNode(t, dialRPC(t, s.RPCAddr()), gpuNode("later", 1)) }},
		{"node", structs.RPCNodeGetNode, func(q structs.QueryOptions) any {
			return &structs.NodeSpecificRequest{NodeID: f.node.ID, QueryOptions: q}
		},
			func() any { return &structs.SingleNodeResponse{} }, func() {
				n := f.node.Copy()
				n.Attributes["changed"] = time.Now().String()
				registerNode(t, dialRPC(t, s.RPCAddr()), n)
			}},
		{"node allocations", structs.RPCNodeGetNodeAllocs, func(q structs.QueryOptions) any {
			return &structs.NodeSpecificRequest{NodeID: f.node.ID, QueryOptions: q}
		},
			func() any { return &structs.NodeAllocsResponse{} }, touch},
		{"gpu summary", structs.RPCGPUSummary, func(q structs.QueryOptions) any { return &structs.GenericRequest{QueryOptions: q} },
			func() any { return &structs.GPUSummaryResponse{} }, touch},
	}
	evalID = f.alloc.EvalID
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			settle(t, s)
			first := tt.reply()
			call(t, s, tt.method, tt.args(q(0, 0)), first)
			idx := replyIndex(first)
			if idx == 0 {
				t.Fatalf("first read answered index 0")
			}

			const wait = 50 * time.Millisecond
			start := time.Now()
			idle := tt.reply()
			call(t, s, tt.method, tt.args(q(idx, wait)), idle)
			if took, got := time.Since(start), replyIndex(idle); took < wait || got != idx {
				t.Errorf("idle blocking read: index %d after %v, want %d after >= %v", got, took, idx, wait)
			}

			done := make(chan error, 1)
			woken := tt.reply()
			go func() { done <- s.RPC(tt.method, tt.args(q(idx, 20*time.Second)), woken) }()
			time.Sleep(20 * time.Millisecond) // let it block (waking is checked either way)
			tt.change()
			select {
			case err := <-done:
				if got := replyIndex(woken); err != nil || got <= idx {
					t.Errorf("woken read: index %d, %v; want above %d", got, err, idx)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("blocking read never woke")
			}
		})
	}
}

// updateEval writes the evaluation again with a new description, as the
// scheduler does when it changes one.
func updateEval(t *testing.T, s *Server, id string) {
	t.Helper()
	e := evalByID(t, s, id).Copy()
	e.StatusDescription = time.Now().String()
	if _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{e}}); err != nil {
		t.Fatalf("update eval: %v", err)
	}
}

// TestReads_Jobs: the job reads filter by namespace and prefix, answer
// [] for nothing, the index the HTTP API always reported, and
// ErrNotFound with Nomad's text for a job that is not there.
func TestReads_Jobs(t *testing.T) {
	f := newReadFixture(t)
	s := f.s
	call(t, s, structs.RPCNamespaceUpsert, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team-a"}}}, &structs.GenericResponse{})
	registerJob(t, s, gpuJob("web-2", structs.JobTypeBatch, 1, 0))
	db := gpuJob("db", structs.JobTypeBatch, 1, 0)
	db.Namespace = "team-a"
	registerJob(t, s, db)

	list := []struct {
		ns, prefix string
		want       []string
	}{
		{"", "", []string{"web", "web-2"}},
		{"default", "web-", []string{"web-2"}},
		{"team-a", "", []string{"db"}},
		{"*", "", []string{"db", "web", "web-2"}},
		{"nope", "", []string{}},
	}
	for _, tt := range list {
		var resp structs.JobListResponse
		call(t, s, structs.RPCJobList, &structs.JobListRequest{QueryOptions: structs.QueryOptions{Namespace: tt.ns, Prefix: tt.prefix}}, &resp)
		got := []string{}
		for _, j := range resp.Jobs {
			got = append(got, j.ID)
		}
		if !slices.Equal(got, tt.want) || resp.Jobs == nil {
			t.Errorf("Job.List %q %q: got %v (nil %t), want %v", tt.ns, tt.prefix, got, resp.Jobs == nil, tt.want)
		}
		if want := tableIndexes(t, s, "jobs", "allocs"); resp.Index != want || !resp.KnownLeader {
			t.Errorf("Job.List index %d (leader %t), want the jobs' and allocs' %d", resp.Index, resp.KnownLeader, want)
		}
	}

	var job structs.SingleJobResponse
	call(t, s, structs.RPCJobGetJob, &structs.JobSpecificRequest{JobID: "db", QueryOptions: structs.QueryOptions{Namespace: "team-a"}}, &job)
	if job.Job == nil || job.Job.Namespace != "team-a" || job.Index != job.Job.ModifyIndex {
		t.Errorf("Job.GetJob db: %+v at %d, want team-a's db at its ModifyIndex", job.Job, job.Index)
	}
	err := s.RPC(structs.RPCJobGetJob, &structs.JobSpecificRequest{JobID: "db"}, &structs.SingleJobResponse{})
	if !errors.Is(err, structs.ErrNotFound) || err.Error() != `job "db" not found` {
		t.Errorf("Job.GetJob db in the default namespace: %v, want ErrNotFound", err)
	}
	err = s.RPC(structs.RPCJobSummary, &structs.JobSpecificRequest{JobID: "db"}, &structs.JobSummaryResponse{})
	if !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("Job.Summary db in the default namespace: %v, want ErrNotFound", err)
	}
	if err := s.RPC(structs.RPCJobGetJob, &structs.JobSpecificRequest{}, &structs.SingleJobResponse{}); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("Job.GetJob without an ID: %v, want ErrInvalid", err)
	}

	var sum structs.JobSummaryResponse
	call(t, s, structs.RPCJobSummary, &structs.JobSpecificRequest{JobID: "web"}, &sum)
	if tg := sum.JobSummary.Summary["train"]; tg.Starting != 1 || sum.Index != tableIndexes(t, s, "jobs", "allocs", "evals") {
		t.Errorf("Job.Summary web: %+v at %d, want 1 starting at the jobs', allocs' and evals' index", sum.JobSummary, sum.Index)
	}

	var allocs structs.JobAllocationsResponse
	call(t, s, structs.RPCJobAllocations, &structs.JobSpecificRequest{JobID: "web"}, &allocs)
	if len(allocs.Allocations) != 1 || allocs.Allocations[0].ID != f.alloc.ID || allocs.Index != f.alloc.ModifyIndex {
		t.Errorf("Job.Allocations web: %d at %d, want %s at its ModifyIndex %d", len(allocs.Allocations), allocs.Index, f.alloc.ID, f.alloc.ModifyIndex)
	}
	var evals structs.JobEvaluationsResponse
	call(t, s, structs.RPCJobEvaluations, &structs.JobSpecificRequest{JobID: "web"}, &evals)
	if len(evals.Evaluations) != 1 || evals.Index != evals.Evaluations[0].ModifyIndex {
		t.Errorf("Job.Evaluations web: %d at %d, want 1 at its ModifyIndex", len(evals.Evaluations), evals.Index)
	}

	// An unknown job has no allocations or evaluations: [] at the table's index.
	var none structs.JobAllocationsResponse
	call(t, s, structs.RPCJobAllocations, &structs.JobSpecificRequest{JobID: "ghost"}, &none)
	var noEvals structs.JobEvaluationsResponse
	call(t, s, structs.RPCJobEvaluations, &structs.JobSpecificRequest{JobID: "ghost"}, &noEvals)
	if none.Allocations == nil || len(none.Allocations) != 0 || none.Index != tableIndexes(t, s, "allocs") ||
		noEvals.Evaluations == nil || len(noEvals.Evaluations) != 0 || noEvals.Index != tableIndexes(t, s, "evals") {
		t.Errorf("reads of an unknown job: %v at %d, %v at %d; want [] at the tables' indexes", none.Allocations, none.Index, noEvals.Evaluations, noEvals.Index)
	}
}

func tableIndexes(t *testing.T, s *Server, tables ...string) uint64 {
	t.Helper()
	idx, err := tablesIndex(s.State(), tables)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// TestReads_AllocsEvalsNodes: lists filter by namespace and prefix; one
// object is found by full ID or unique prefix, in any namespace; an
// unknown one is ErrNotFound, an ambiguous prefix ErrInvalid naming the
// matches.
func TestReads_AllocsEvalsNodes(t *testing.T) {
	f := newReadFixture(t)
	s := f.s
	conn := dialRPC(t, s.RPCAddr())
	for _, id := range []string{"abcd0001-0000-4000-8000-000000000000", "abcd0002-0000-4000-8000-000000000000"} {
		n := gpuNode("n-"+id[:8], 1)
		n.ID = id
		registerNode(t, conn, n)
	}
	var evals []*structs.Evaluation
	for i := range 12 {
		e := &structs.Evaluation{ID: fmt.Sprintf("eeee%04d-0000-4000-8000-000000000000", i), Namespace: structs.DefaultNamespace,
			Type: structs.JobTypeBatch, JobID: "web", Status: structs.EvalStatusComplete, TriggeredBy: structs.EvalTriggerJobRegister}
		evals = append(evals, e)
	}
	if _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		method  string
		args    any
		reply   any
		id      func(reply any) string
		want    string
		wantErr error
		errText string
	}{
		{"alloc by ID", structs.RPCAllocGetAlloc, &structs.AllocSpecificRequest{AllocID: f.alloc.ID}, &structs.SingleAllocResponse{},
			func(r any) string { return r.(*structs.SingleAllocResponse).Alloc.ID }, f.alloc.ID, nil, ""},
		{"alloc by prefix", structs.RPCAllocGetAlloc, &structs.AllocSpecificRequest{AllocID: f.alloc.ID[:8]}, &structs.SingleAllocResponse{},
			func(r any) string { return r.(*structs.SingleAllocResponse).Alloc.ID }, f.alloc.ID, nil, ""},
		{"alloc unknown", structs.RPCAllocGetAlloc, &structs.AllocSpecificRequest{AllocID: "zz"}, &structs.SingleAllocResponse{},
			nil, "", structs.ErrNotFound, `allocation "zz" not found`},
		{"alloc without ID", structs.RPCAllocGetAlloc, &structs.AllocSpecificRequest{}, &structs.SingleAllocResponse{},
			nil, "", structs.ErrInvalid, "missing allocation ID"},
		{"eval by prefix", structs.RPCEvalGetEval, &structs.EvalSpecificRequest{EvalID: "eeee0011"}, &structs.SingleEvalResponse{},
			func(r any) string { return r.(*structs.SingleEvalResponse).Eval.ID }, evals[11].ID, nil, ""},
		{"eval ambiguous", structs.RPCEvalGetEval, &structs.EvalSpecificRequest{EvalID: "eeee"}, &structs.SingleEvalResponse{},
			nil, "", structs.ErrInvalid, `evaluation prefix "eeee" matches 12 objects: ` + idList(evals[:10])},
		{"eval unknown", structs.RPCEvalAllocations, &structs.EvalSpecificRequest{EvalID: "ffff"}, &structs.EvalAllocationsResponse{},
			nil, "", structs.ErrNotFound, `evaluation "ffff" not found`},
		{"node by prefix", structs.RPCNodeGetNode, &structs.NodeSpecificRequest{NodeID: "abcd0002"}, &structs.SingleNodeResponse{},
			func(r any) string { return r.(*structs.SingleNodeResponse).Node.ID }, "abcd0002-0000-4000-8000-000000000000", nil, ""},
		{"node ambiguous", structs.RPCNodeGetNodeAllocs, &structs.NodeSpecificRequest{NodeID: "abcd"}, &structs.NodeAllocsResponse{},
			nil, "", structs.ErrInvalid, `node prefix "abcd" matches 2 objects: abcd0001-0000-4000-8000-000000000000, abcd0002-0000-4000-8000-000000000000`},
		{"node unknown", structs.RPCNodeGetNode, &structs.NodeSpecificRequest{NodeID: "ffff"}, &structs.SingleNodeResponse{},
			nil, "", structs.ErrNotFound, `node "ffff" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.RPC(tt.method, tt.args, tt.reply)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || err.Error() != tt.errText {
					t.Errorf("got %v, want %q (%v)", err, tt.errText, tt.wantErr)
				}
				return
			}
			if err != nil || tt.id(tt.reply) != tt.want {
				t.Errorf("got %v, %v; want %s", tt.reply, err, tt.want)
			}
		})
	}

	var evalAllocs structs.EvalAllocationsResponse
	call(t, s, structs.RPCEvalAllocations, &structs.EvalSpecificRequest{EvalID: f.alloc.EvalID[:8]}, &evalAllocs)
	if len(evalAllocs.Allocations) != 1 || evalAllocs.Allocations[0].ID != f.alloc.ID || evalAllocs.Index != tableIndexes(t, s, "allocs") {
		t.Errorf("Eval.Allocations: %d at %d, want %s at the allocs' index", len(evalAllocs.Allocations), evalAllocs.Index, f.alloc.ID)
	}
	var nodeAllocs structs.NodeAllocsResponse
	call(t, s, structs.RPCNodeGetNodeAllocs, &structs.NodeSpecificRequest{NodeID: f.node.ID[:8]}, &nodeAllocs)
	var empty structs.NodeAllocsResponse
	call(t, s, structs.RPCNodeGetNodeAllocs, &structs.NodeSpecificRequest{NodeID: "abcd0001"}, &empty)
	if len(nodeAllocs.Allocs) != 1 || nodeAllocs.Allocs[0].ID != f.alloc.ID || empty.Allocs == nil || len(empty.Allocs) != 0 {
		t.Errorf("Node.GetNodeAllocs: %d, then %v; want %s, then []", len(nodeAllocs.Allocs), empty.Allocs, f.alloc.ID)
	}

	lists := []struct {
		name   string
		method string
		args   any
		reply  any
		count  func(any) int
		want   int
		table  string
	}{
		{"allocs in default", structs.RPCAllocList, &structs.AllocListRequest{}, &structs.AllocListResponse{},
			func(r any) int { return len(r.(*structs.AllocListResponse).Allocations) }, 1, "allocs"},
		{"allocs in all", structs.RPCAllocList, &structs.AllocListRequest{QueryOptions: structs.QueryOptions{Namespace: "*", Prefix: f.alloc.ID[:4]}}, &structs.AllocListResponse{},
			func(r any) int { return len(r.(*structs.AllocListResponse).Allocations) }, 1, "allocs"},
		{"allocs in another namespace", structs.RPCAllocList, &structs.AllocListRequest{QueryOptions: structs.QueryOptions{Namespace: "team-a"}}, &structs.AllocListResponse{},
			func(r any) int { return len(r.(*structs.AllocListResponse).Allocations) }, 0, "allocs"},
		{"evals by prefix", structs.RPCEvalList, &structs.EvalListRequest{QueryOptions: structs.QueryOptions{Prefix: "eeee001"}}, &structs.EvalListResponse{},
			func(r any) int { return len(r.(*structs.EvalListResponse).Evaluations) }, 2, "evals"},
		{"evals in another namespace", structs.RPCEvalList, &structs.EvalListRequest{QueryOptions: structs.QueryOptions{Namespace: "team-a"}}, &structs.EvalListResponse{},
			func(r any) int { return len(r.(*structs.EvalListResponse).Evaluations) }, 0, "evals"},
		{"nodes by prefix", structs.RPCNodeList, &structs.NodeListRequest{QueryOptions: structs.QueryOptions{Prefix: "abcd"}}, &structs.NodeListResponse{},
			func(r any) int { return len(r.(*structs.NodeListResponse).Nodes) }, 2, "nodes"},
	}
	for _, tt := range lists {
		t.Run(tt.name, func(t *testing.T) {
			call(t, s, tt.method, tt.args, tt.reply)
			if got, idx := tt.count(tt.reply), replyIndex(tt.reply); got != tt.want || idx != tableIndexes(t, s, tt.table) {
				t.Errorf("got %d at index %d, want %d at the %s table's", got, idx, tt.want, tt.table)
			}
			if list := reflect.ValueOf(tt.reply).Elem().Field(0); list.IsNil() {
				t.Errorf("%s is nil, want [] when empty", reflect.TypeOf(tt.reply).Elem().Field(0).Name)
			}
		})
	}
}

func idList(evals []*structs.Evaluation) string {
	ids := make([]string, len(evals))
	for i, e := range evals {
		ids[i] = e.ID
	}
	return strings.Join(ids, ", ")
}

// TestReads_NodeSecretNeverAnswered: a node's SecretID, which
// authenticates its client, is in no user read of the node, in process
// or over TCP, and the stored node keeps it.
func TestReads_NodeSecretNeverAnswered(t *testing.T) {
	f := newReadFixture(t)
	s := f.s
	conn := dialRPC(t, s.RPCAddr())
	if _, ok := reflect.TypeFor[structs.NodeListStub]().FieldByName("SecretID"); ok {
		t.Fatal("NodeListStub has a SecretID field")
	}
	var inProc, overTCP structs.SingleNodeResponse
	call(t, s, structs.RPCNodeGetNode, &structs.NodeSpecificRequest{NodeID: f.node.ID}, &inProc)
	if err := conn.Call(structs.RPCNodeGetNode, &structs.NodeSpecificRequest{NodeID: f.node.ID[:6]}, &overTCP); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]*structs.Node{"in process": inProc.Node, "over TCP": overTCP.Node} {
		if n == nil || n.ID != f.node.ID || n.SecretID != "" || n.Name != f.node.Name {
			t.Errorf("%s: Node.GetNode answered %+v, want the node without its SecretID", name, n)
		}
	}
	if stored, _ := s.State().NodeByID(nil, f.node.ID); stored.SecretID != f.node.SecretID {
		t.Errorf("the stored node's SecretID is %q after a read, want %q", stored.SecretID, f.node.SecretID)
	}
	var list structs.NodeListResponse
	if err := conn.Call(structs.RPCNodeList, &structs.NodeListRequest{}, &list); err != nil || len(list.Nodes) != 1 || list.Nodes[0].ID != f.node.ID {
		t.Errorf("Node.List over TCP: %+v, %v", list.Nodes, err)
	}
}

// TestReads_OverTCP: replies survive the msgpack codec, empty lists
// included, and errors keep Nomad's text.
func TestReads_OverTCP(t *testing.T) {
	f := newReadFixture(t)
	conn := dialRPC(t, f.s.RPCAddr())
	var jobs structs.JobListResponse
	if err := conn.Call(structs.RPCJobList, &structs.JobListRequest{QueryOptions: structs.QueryOptions{Namespace: "*"}}, &jobs); err != nil ||
		len(jobs.Jobs) != 1 || jobs.Jobs[0].ID != "web" || jobs.Jobs[0].JobSummary == nil || jobs.Index == 0 {
		t.Errorf("Job.List over TCP: %+v, %v", jobs, err)
	}
	var empty structs.EvalListResponse
	if err := conn.Call(structs.RPCEvalList, &structs.EvalListRequest{QueryOptions: structs.QueryOptions{Prefix: "ffff"}}, &empty); err != nil ||
		empty.Evaluations == nil || len(empty.Evaluations) != 0 {
		t.Errorf("Eval.List over TCP: %+v, %v", empty, err)
	}
	var alloc structs.SingleAllocResponse
	err := structs.DecodeRPCError(conn.Call(structs.RPCAllocGetAlloc, &structs.AllocSpecificRequest{AllocID: "ffff"}, &alloc))
	if err == nil || err.Error() != `allocation "ffff" not found` || !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("Alloc.GetAlloc of an unknown ID over TCP: %v", err)
	}
	var gpus structs.GPUSummaryResponse
	if err := conn.Call(structs.RPCGPUSummary, &structs.GenericRequest{}, &gpus); err != nil || gpus.Summary == nil || gpus.Summary.Total != 4 {
		t.Errorf("GPU.Summary over TCP: %+v, %v", gpus.Summary, err)
	}
}

// TestGPUSummary counts GPUs by model and node: held ones are allocated,
// healthy ones on a ready node that nobody holds are free, an unhealthy
// one is unhealthy (and free nowhere), and a down node's are not free.
func TestGPUSummary(t *testing.T) {
	f := newReadFixture(t)
	s := f.s
	conn := dialRPC(t, s.RPCAddr())
	sick := gpuNode("sick", 2)
	sick.NodeResources.Devices[0].Instances[1].Healthy = false
	registerNode(t, conn, sick)
	down := gpuNode("down", 1)
	down.NodeResources.Devices[0].Name = "NVIDIA A100"
	registerNode(t, conn, down)
	var gen structs.NodeUpdateResponse
	if err := conn.Call(structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{NodeID: down.ID, SecretID: down.SecretID, Status: structs.NodeStatusDown}, &gen); err != nil {
		t.Fatal(err)
	}

	var resp structs.GPUSummaryResponse
	call(t, s, structs.RPCGPUSummary, &structs.GenericRequest{}, &resp)
	sum := resp.Summary
	if sum.Total != 7 || sum.Allocated != 1 || sum.Free != 4 || sum.Unhealthy != 1 || resp.Index != tableIndexes(t, s, "nodes", "allocs") {
		t.Errorf("totals %d/%d/%d/%d at %d, want 7 total, 1 allocated, 4 free, 1 unhealthy at the nodes' and allocs' index",
			sum.Total, sum.Allocated, sum.Free, sum.Unhealthy, resp.Index)
	}
	var models []string
	for _, m := range sum.Models {
		models = append(models, fmt.Sprintf("%s %d/%d/%d/%d %d", m.Model, m.Total, m.Allocated, m.Free, m.Unhealthy, m.MemoryBytes))
	}
	want := []string{"NVIDIA A100 1/0/0/0 85899345920", "NVIDIA H100 80GB HBM3 6/1/4/1 85899345920"}
	if !slices.Equal(models, want) {
		t.Errorf("models %v, want %v", models, want)
	}
	nodes := map[string]string{}
	for _, n := range sum.Nodes {
		nodes[n.Name] = fmt.Sprintf("%s %d/%d/%d", n.Status, n.GPUs, n.Allocated, n.Unhealthy)
	}
	wantNodes := map[string]string{"gpu-1": "ready 4/1/0", "sick": "ready 2/0/1", "down": "down 1/0/0"}
	if !reflect.DeepEqual(nodes, wantNodes) {
		t.Errorf("nodes %v, want %v", nodes, wantNodes)
	}
}

// TestStatus_LeaderPeersRegions: a lone server is its own leader and
// only peer, in the default region.
func TestStatus_LeaderPeersRegions(t *testing.T) {
	s := startServer(t, testConfig(t))
	var leader string
	var peers, regions []string
	call(t, s, structs.RPCStatusLeader, &structs.GenericRequest{}, &leader)
	call(t, s, structs.RPCStatusPeers, &structs.GenericRequest{}, &peers)
	call(t, s, structs.RPCStatusRegions, &structs.GenericRequest{}, &regions)
	addr := s.RPCAddr().String()
	if leader != addr || !slices.Equal(peers, []string{addr}) || !slices.Equal(regions, []string{"global"}) {
		t.Errorf("leader %q, peers %v, regions %v; want %s, [%s], [global]", leader, peers, regions, addr, addr)
	}
	var overTCP string
	if err := dialRPC(t, s.RPCAddr()).Call(structs.RPCStatusLeader, &structs.GenericRequest{}, &overTCP); err != nil || overTCP != addr {
		t.Errorf("Status.Leader over TCP: %q, %v", overTCP, err)
	}
}

// TestReads_EndWithTheirCaller: a blocking query made in process with
// the caller's context (an HTTP request's) ends when that context does,
// not at the end of its wait.
func TestReads_EndWithTheirCaller(t *testing.T) {
	f := newReadFixture(t)
	var first structs.JobListResponse
	call(t, f.s, structs.RPCJobList, &structs.JobListRequest{}, &first)
	ctx, cancel := context.WithCancel(context.Background())
	args := &structs.JobListRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: first.Index, MaxQueryTime: time.Minute}}
	args.SetContext(ctx)
	done := make(chan error, 1)
	go func() { done <- f.s.RPC(structs.RPCJobList, args, &structs.JobListResponse{}) }()
	select {
	case err := <-done:
		t.Fatalf("the blocking query returned before anything changed or its caller left: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the blocking query outlived its caller's context")
	}
}
