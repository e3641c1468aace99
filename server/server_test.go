package server

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/structs"
)

func TestServer_GPUJobPlaced(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	if err := c.Call(structs.RPCStatusPing, struct{}{}, &struct{}{}); err != nil {
		t.Fatalf("Status.Ping: %v", err)
	}
	node := gpuNode("gpu-1", 4)
	reg := registerNode(t, c, node)
	if reg.HeartbeatTTL != 10*time.Second || !slices.Equal(reg.Servers, []string{s.RPCAddr().String()}) || reg.Index == 0 {
		t.Errorf("register response = %+v, want TTL 10s, servers [%s], an index", reg, s.RPCAddr())
	}

	resp := registerJob(t, s, gpuJob("train", structs.JobTypeBatch, 1, 2))
	if resp.EvalID == "" || resp.EvalCreateIndex == 0 || resp.JobModifyIndex != resp.EvalCreateIndex {
		t.Errorf("register job response = %+v, want an eval created with the job", resp)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		return len(liveAllocs(t, s, "train")) == 1, "no allocation placed"
	})
	alloc := liveAllocs(t, s, "train")[0]
	gpus := alloc.DeviceIDs()
	onNode := node.NodeResources.Devices[0].SortedDeviceIDs()
	if len(gpus) != 2 || gpus[0] == gpus[1] || !slices.Contains(onNode, gpus[0]) || !slices.Contains(onNode, gpus[1]) {
		t.Errorf("alloc GPUs = %v, want 2 distinct of %v", gpus, onNode)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		e := evalByID(t, s, resp.EvalID)
		return e.Status == structs.EvalStatusComplete, "eval status " + e.Status
	})
	// The plan was committed whole, so the evaluation's end came in the
	// same Raft entry as the allocation.
	if e := evalByID(t, s, resp.EvalID); e.ModifyIndex != alloc.CreateIndex {
		t.Errorf("eval completed at index %d, alloc created at %d: want one plan commit for both", e.ModifyIndex, alloc.CreateIndex)
	}

	// The client sees the allocation over TCP.
	var allocs structs.NodeAllocsResponse
	req := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID}
	if err := c.Call(structs.RPCNodeGetAllocs, req, &allocs); err != nil {
		t.Fatalf("Node.GetAllocs: %v", err)
	}
	if len(allocs.Allocs) != 1 || allocs.Allocs[0].ID != alloc.ID || allocs.Index < alloc.ModifyIndex || !allocs.KnownLeader {
		t.Errorf("GetAllocs = %d allocs at index %d (leader %t), want [%s] at >= %d",
			len(allocs.Allocs), allocs.Index, allocs.KnownLeader, alloc.ID, alloc.ModifyIndex)
	}
}

func TestServer_GetAllocsBlocks(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("gpu-1", 2)
	registerNode(t, c, node)

	var first structs.NodeAllocsResponse
	if err := c.Call(structs.RPCNodeGetAllocs, &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID}, &first); err != nil {
		t.Fatal(err)
	}
	if len(first.Allocs) != 0 || first.Index == 0 {
		t.Fatalf("first GetAllocs = %d allocs at %d, want none at a non-zero index", len(first.Allocs), first.Index)
	}

	// Times out without a change.
	start := time.Now()
	var idle structs.NodeAllocsResponse
	req := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID, QueryOptions: structs.QueryOptions{MinQueryIndex: first.Index, MaxQueryTime: 100 * time.Millisecond}}
	if err := c.Call(structs.RPCNodeGetAllocs, req, &idle); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond || len(idle.Allocs) != 0 {
		t.Errorf("idle query returned after %s with %d allocs, want >= 100ms and none", waited, len(idle.Allocs))
	}

	// Wakes when a placement lands.
	done := make(chan *structs.NodeAllocsResponse, 1)
	go func() {
		var resp structs.NodeAllocsResponse
		req := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID, QueryOptions: structs.QueryOptions{MinQueryIndex: first.Index, MaxQueryTime: 10 * time.Second}}
		if err := c.Call(structs.RPCNodeGetAllocs, req, &resp); err != nil {
			t.Errorf("blocking GetAllocs: %v", err)
		}
		done <- &resp
	}()
	registerJob(t, s, gpuJob("train", structs.JobTypeBatch, 1, 1))
	select {
	case resp := <-done:
		if len(resp.Allocs) != 1 || resp.Index <= first.Index {
			t.Errorf("woken GetAllocs = %d allocs at %d, want 1 above %d", len(resp.Allocs), resp.Index, first.Index)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking GetAllocs never returned")
	}

	var unknown structs.NodeAllocsResponse
	err := c.Call(structs.RPCNodeGetAllocs, &structs.NodeSpecificRequest{NodeID: "nope"}, &unknown)
	if err == nil || !strings.Contains(err.Error(), "unknown node") {
		t.Errorf("GetAllocs of unknown node: %v, want unknown node", err)
	}
}

func TestServer_BlockedEvalUnblockedByNewNode(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("small", 4))
	resp := registerJob(t, s, gpuJob("big", structs.JobTypeBatch, 1, 5))

	var blocked *structs.Evaluation
	waitFor(t, 5*time.Second, func() (bool, string) {
		e := evalByID(t, s, resp.EvalID)
		if e.Status != structs.EvalStatusComplete || e.BlockedEval == "" {
			return false, "eval " + e.Status + ", no blocked eval"
		}
		blocked = evalByID(t, s, e.BlockedEval)
		return blocked != nil, "blocked eval not in state"
	})
	if blocked.Status != structs.EvalStatusBlocked {
		t.Fatalf("blocked eval status = %s, want blocked", blocked.Status)
	}
	metric := blocked.FailedTGAllocs["train"]
	if metric == nil || !mentionsGPU(metric) {
		t.Errorf("FailedTGAllocs[train] = %+v, want a reason naming GPUs", metric)
	}
	if got := s.blocked.Stats().TotalBlocked; got != 1 {
		t.Errorf("blocked evals tracked = %d, want 1", got)
	}

	big := gpuNode("big", 8)
	registerNode(t, c, big)
	waitFor(t, 5*time.Second, func() (bool, string) {
		allocs := liveAllocs(t, s, "big")
		return len(allocs) == 1 && allocs[0].NodeID == big.ID, "no allocation on the new node"
	})
	waitFor(t, 5*time.Second, func() (bool, string) {
		e := evalByID(t, s, blocked.ID)
		return e.Status == structs.EvalStatusComplete, "blocked eval status " + e.Status
	})
}

// mentionsGPU reports whether any filter or exhaustion reason names GPUs.
func mentionsGPU(m *structs.AllocMetric) bool {
	for _, reasons := range []map[string]int{m.ConstraintFiltered, m.DimensionExhausted, m.ClassExhausted} {
		for r := range reasons {
			if strings.Contains(strings.ToLower(r), "gpu") || strings.Contains(r, "device") {
				return true
			}
		}
	}
	return false
}

func TestServer_RPCErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	badJob := gpuJob("bad", structs.JobTypeBatch, 1, 1)
	badJob.TaskGroups = nil                                 // no datacenters is valid now (Nomad's default "*")
	systemJob := gpuJob("sys", structs.JobTypeSystem, 2, 1) // a system job runs one per node
	tests := []struct {
		name    string
		method  string
		args    any
		reply   any
		wantErr error
	}{
		{"register nil job", structs.RPCJobRegister, &structs.JobRegisterRequest{}, &structs.JobRegisterResponse{}, structs.ErrInvalid},
		{"register invalid job", structs.RPCJobRegister, &structs.JobRegisterRequest{Job: badJob}, &structs.JobRegisterResponse{}, structs.ErrInvalid},
		{"register system job with count", structs.RPCJobRegister, &structs.JobRegisterRequest{Job: systemJob}, &structs.JobRegisterResponse{}, structs.ErrInvalid},
		{"deregister unknown job", structs.RPCJobDeregister, &structs.JobDeregisterRequest{JobID: "nope"}, &structs.JobDeregisterResponse{}, structs.ErrNotFound},
		{"heartbeat unknown node", structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{NodeID: "nope"}, &structs.NodeUpdateResponse{}, structs.ErrUnknownNode},
		{"register node without ID", structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: &structs.Node{}}, &structs.NodeUpdateResponse{}, structs.ErrInvalid},
		{"unknown method", "Job.Nope", &structs.JobRegisterRequest{}, &structs.JobRegisterResponse{}, structs.ErrInvalid},
		{"wrong reply type", structs.RPCJobRegister, &structs.JobRegisterRequest{}, &structs.GenericResponse{}, structs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.RPC(tt.method, tt.args, tt.reply); !errors.Is(err, tt.wantErr) {
				t.Errorf("RPC(%s) = %v, want %v", tt.method, err, tt.wantErr)
			}
		})
	}

	c := dialRPC(t, s.RPCAddr())
	err := c.Call(structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{NodeID: "nope"}, &structs.NodeUpdateResponse{})
	if err == nil || !strings.Contains(err.Error(), "unknown node") {
		t.Errorf("heartbeat of unknown node over TCP: %v, want an error containing \"unknown node\"", err)
	}
}

func TestServer_DeregisterStopsAllocs(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	registerNode(t, dialRPC(t, s.RPCAddr()), gpuNode("n1", 2))
	registerJob(t, s, gpuJob("web", structs.JobTypeService, 2, 1))
	waitFor(t, 5*time.Second, func() (bool, string) {
		return len(liveAllocs(t, s, "web")) == 2, "allocations not placed"
	})
	var resp structs.JobDeregisterResponse
	if err := s.RPC(structs.RPCJobDeregister, structs.JobDeregisterRequest{JobID: "web"}, &resp); err != nil {
		t.Fatalf("Job.Deregister: %v", err)
	}
	if resp.EvalID == "" || resp.Index == 0 {
		t.Errorf("deregister response = %+v, want an eval and index", resp)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		return len(liveAllocs(t, s, "web")) == 0, "allocations still live after deregister"
	})
	job, err := s.State().JobByID(nil, structs.DefaultNamespace, "web")
	if err != nil || job == nil || !job.Stop {
		t.Errorf("job after deregister = %+v (err %v), want stopped", job, err)
	}
}

func TestServer_HeartbeatExpiryMarksNodeDown(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HeartbeatTTL = 500 * time.Millisecond
	s := startServer(t, cfg)
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 2)
	registerNode(t, c, node)
	heartbeat := func() error {
		req := &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID, Status: structs.NodeStatusReady}
		return c.Call(structs.RPCNodeUpdateStatus, req, &structs.NodeUpdateResponse{})
	}

	// Heartbeats keep it ready over several TTLs while the job is placed.
	stop := make(chan struct{})
	beating := make(chan error, 1)
	go func() {
		tick := time.NewTicker(cfg.HeartbeatTTL / 5)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				beating <- nil
				return
			case <-tick.C:
				if err := heartbeat(); err != nil {
					beating <- err
					return
				}
			}
		}
	}()
	registerJob(t, s, gpuJob("web", structs.JobTypeService, 1, 1))
	waitFor(t, 5*time.Second, func() (bool, string) {
		return len(liveAllocs(t, s, "web")) == 1, "allocation not placed"
	})
	time.Sleep(2 * cfg.HeartbeatTTL)
	close(stop)
	if err := <-beating; err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	if n, _ := s.State().NodeByID(nil, node.ID); n.Status != structs.NodeStatusReady {
		t.Fatalf("heartbeating node is %s, want ready", n.Status)
	}

	// Silence: the node goes down and its allocation is lost.
	waitFor(t, 5*time.Second, func() (bool, string) {
		n, _ := s.State().NodeByID(nil, node.ID)
		return n.Status == structs.NodeStatusDown, "node still " + n.Status
	})
	waitFor(t, 5*time.Second, func() (bool, string) {
		return len(liveAllocs(t, s, "web")) == 0, "allocation on the down node not stopped"
	})
	evals, err := s.State().EvalsByJob(nil, structs.DefaultNamespace, "web")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evals, func(e *structs.Evaluation) bool {
		return e.TriggeredBy == structs.EvalTriggerNodeUpdate && e.NodeID == node.ID
	}) {
		t.Errorf("no node-update eval for the down node among %d evals", len(evals))
	}

	// It comes back: ready again, and the job is placed again.
	if err := heartbeat(); err != nil {
		t.Fatalf("heartbeat after down: %v", err)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		n, _ := s.State().NodeByID(nil, node.ID)
		return n.Status == structs.NodeStatusReady && len(liveAllocs(t, s, "web")) == 1, "node " + n.Status + ", job not placed again"
	})
}

func TestServer_RestartKeepsState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		snapshot bool // take a Raft snapshot before shutting down
	}{
		{"log replay", false},
		{"snapshot restore", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			s, err := NewServer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, func() (bool, string) { return s.IsLeader() && s.broker.Enabled(), "no leader" })
			c := dialRPC(t, s.RPCAddr())
			node := gpuNode("n1", 4)
			registerNode(t, c, node)
			registerJob(t, s, gpuJob("train", structs.JobTypeBatch, 1, 2))
			registerJob(t, s, gpuJob("huge", structs.JobTypeBatch, 1, 8)) // leaves a blocked eval
			waitFor(t, 5*time.Second, func() (bool, string) {
				evals, err := s.State().Evals(nil, "*")
				if err != nil {
					t.Fatal(err)
				}
				settled := !slices.ContainsFunc(evals, func(e *structs.Evaluation) bool { return e.Status == structs.EvalStatusPending })
				return settled && len(liveAllocs(t, s, "train")) == 1 && s.blocked.Stats().TotalBlocked == 1, "not placed and blocked yet"
			})
			before := dump(t, s)
			if tt.snapshot {
				if err := s.raft.Snapshot().Error(); err != nil {
					t.Fatalf("raft snapshot: %v", err)
				}
			}
			_ = c.Close()
			if err := s.Shutdown(); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}

			cfg.RPCAddr = s.RPCAddr().(*net.TCPAddr)
			s2 := startServer(t, cfg)
			after := dump(t, s2)
			if !slices.Equal(after, before) {
				t.Errorf("state after restart:\n%s\nwant:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
			}
			// A restored snapshot may hide a capacity change, so its
			// blocked evals are retried once: the eval ends up blocked
			// again either way.
			waitFor(t, 5*time.Second, func() (bool, string) {
				st := s2.blocked.Stats()
				return st.TotalBlocked == 1, fmt.Sprintf("blocked evals restored = %d, want 1", st.TotalBlocked)
			})
		})
	}
}

// dump lists every object in state with the fields a restart must keep.
func dump(t *testing.T, s *Server) []string {
	t.Helper()
	st := s.State()
	var out []string
	nodes, err := st.Nodes(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		out = append(out, "node "+n.ID+" "+n.Status)
	}
	jobs, err := st.Jobs(nil, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		out = append(out, "job "+j.ID+" "+j.Status)
	}
	evals, err := st.Evals(nil, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evals {
		out = append(out, "eval "+e.ID+" "+e.JobID+" "+e.Status)
	}
	allocs, err := st.Allocs(nil, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allocs {
		out = append(out, "alloc "+a.ID+" "+a.NodeID+" "+strings.Join(a.DeviceIDs(), ","))
	}
	return out
}

func TestServer_NotLeaderRefusesWrites(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.BootstrapExpect = 0 // never elects itself
	cfg.RPCHoldTimeout = 200 * time.Millisecond
	s := startServer(t, cfg)
	start := time.Now()
	err := s.RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: gpuJob("j", structs.JobTypeBatch, 1, 1)}, &structs.JobRegisterResponse{})
	if !errors.Is(err, structs.ErrNoLeader) {
		t.Errorf("Job.Register without a leader = %v, want %v", err, structs.ErrNoLeader)
	}
	if took := time.Since(start); took < cfg.RPCHoldTimeout || took > cfg.RPCHoldTimeout+time.Second {
		t.Errorf("Job.Register without a leader failed after %v, want about the hold timeout %v", took, cfg.RPCHoldTimeout)
	}
	if s.IsLeader() || s.Leader() != "" {
		t.Errorf("IsLeader %t, Leader %q; want no leader", s.IsLeader(), s.Leader())
	}
}

func TestServer_RaftReachableOnRPCPort(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	if got := s.Peers(); !slices.Equal(got, []string{s.RPCAddr().String()}) {
		t.Errorf("Peers = %v, want [%s]", got, s.RPCAddr())
	}
	if s.Leader() != s.RPCAddr().String() {
		t.Errorf("Leader = %q, want %q", s.Leader(), s.RPCAddr())
	}

	// A peer from an older term dials in through the RPC port.
	layer := newRaftLayer(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: layer, MaxPool: 1, Timeout: 5 * time.Second, Logger: hclog.NewNullLogger(),
	})
	defer trans.Close()
	var resp raft.AppendEntriesResponse
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("stale"), Addr: []byte("stale")}, Term: 0}
	if err := trans.AppendEntries("stale", raft.ServerAddress(s.RPCAddr().String()), req, &resp); err != nil {
		t.Fatalf("AppendEntries over the RPC port: %v", err)
	}
	if resp.Success || resp.Term == 0 {
		t.Errorf("stale AppendEntries = %+v, want rejected with the current term", resp)
	}
}

// TestServer_ShutdownLeavesNoGoroutines runs alone (not parallel) so the
// goroutine count is the server's.
func TestServer_ShutdownLeavesNoGoroutines(t *testing.T) {
	baseline := runtime.NumGoroutine()
	cfg := testConfig(t)
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) { return s.IsLeader() && s.broker.Enabled(), "no leader" })
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 2)
	registerNode(t, c, node)
	registerJob(t, s, gpuJob("train", structs.JobTypeBatch, 1, 1))
	waitFor(t, 5*time.Second, func() (bool, string) { return len(liveAllocs(t, s, "train")) == 1, "not placed" })

	// A client blocked in a long poll while the server goes away.
	polled := make(chan error, 1)
	go func() {
		req := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID, QueryOptions: structs.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: time.Minute}}
		polled <- c.Call(structs.RPCNodeGetAllocs, req, &structs.NodeAllocsResponse{})
	}()
	time.Sleep(50 * time.Millisecond)
	if err := s.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case <-polled:
	case <-time.After(5 * time.Second):
		t.Fatal("long poll still blocked after Shutdown")
	}
	_ = c.Close()
	waitFor(t, 5*time.Second, func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= baseline, fmt.Sprintf("%d goroutines, %d before the server started:\n%s", n, baseline, stacks())
	})
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

func TestServer_RegisterWarnsOfWhatIsNotActedOn(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	job := gpuJob("web", structs.JobTypeService, 1, 0)
	job.Update = &structs.UpdateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckManual}
	resp := registerJob(t, s, job)
	if !strings.Contains(resp.Warnings, `health_check = "manual" is accepted but not acted on yet`) {
		t.Errorf("register warnings = %q, want the manual health warning", resp.Warnings)
	}
	if plain := registerJob(t, s, gpuJob("train", structs.JobTypeBatch, 1, 0)); plain.Warnings != "" {
		t.Errorf("register warnings for a plain job = %q, want none", plain.Warnings)
	}
}
