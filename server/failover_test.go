package server

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/droverhq/drover/client"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

// The tests here run real clients (package client) against real
// servers. They import the client package, which no server code does:
// the two meet only over the wire, here too.

// writeRecord is one registration of TestFailover_WritesAcrossLeaderKill.
type writeRecord struct {
	id         string
	start, end time.Time
	err        error
}

// TestFailover_WritesAcrossLeaderKill: writers register jobs through two
// followers, in process and over TCP, while the leader is killed. Every
// registration either succeeds, and is then stored on the new leader,
// or fails with "no cluster leader" or "outcome unknown"; none is lost
// or fails otherwise. Those in flight when the leader is gone are
// retried to success after the election.
func TestFailover_WritesAcrossLeaderKill(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	followers := c.Followers()
	conn := dialRPC(t, followers[1].RPCAddr())
	register := []func(job *structs.Job) error{
		func(job *structs.Job) error {
			return followers[0].RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{})
		},
		func(job *structs.Job) error {
			return conn.Call(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{})
		},
	}

	var mu sync.Mutex
	var records []writeRecord
	acked := func(after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, r := range records {
			if r.err == nil && r.start.After(after) {
				n++
			}
		}
		return n
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				r := writeRecord{id: fmt.Sprintf("w%d-%d", w, n), start: time.Now()}
				r.err = register[w%2](gpuJob(r.id, structs.JobTypeBatch, 1, 1))
				r.end = time.Now()
				mu.Lock()
				records = append(records, r)
				mu.Unlock()
			}
		}()
	}
	defer func() { // on a failed wait too
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	waitFor(t, 10*time.Second, func() (bool, string) { return acked(time.Time{}) >= 20, "writes before the kill not acknowledged" })
	killStart := time.Now()
	c.Kill(c.Index(leader))
	killed := time.Now()
	t.Logf("kill took %s", killed.Sub(killStart).Round(time.Millisecond))
	next := c.WaitForLeader(10 * time.Second)
	elected := time.Now()
	waitFor(t, 10*time.Second, func() (bool, string) { return acked(elected) >= 20, "writes after the election not acknowledged" })
	close(stop)
	wg.Wait()

	var ok, failed, inFlight int
	for _, r := range records {
		if r.start.Before(killed) && r.end.After(killed) && r.err == nil {
			inFlight++
		}
		if r.err != nil {
			failed++
			msg := r.err.Error()
			if !strings.Contains(msg, structs.ErrNoLeader.Error()) && !strings.Contains(msg, structs.ErrOutcomeUnknown.Error()) {
				t.Errorf("register %s: %v; want success, no cluster leader, or outcome unknown", r.id, r.err)
			}
			continue
		}
		ok++
		if job, err := next.State().JobByID(nil, structs.DefaultNamespace, r.id); err != nil || job == nil {
			t.Errorf("register %s was acknowledged but the new leader lacks the job (err %v)", r.id, err)
		}
	}
	t.Logf("%d registrations acknowledged, %d failed, %d in flight when the leader was gone and acknowledged after the election; election took %s",
		ok, failed, inFlight, elected.Sub(killed).Round(time.Millisecond))
	if inFlight == 0 {
		t.Error("no registration in flight when the leader was gone was acknowledged; want the in-flight ones retried")
	}
}

// TestFailover_NewLeaderGivesFailoverTTL: the nodes' timers move with
// leadership. A new leader gives every ready node the failover TTL, not
// the normal one, so that a node whose client is still looking for the
// new leader is not marked down; a node that stays silent is marked down
// once the failover TTL has passed.
func TestFailover_NewLeaderGivesFailoverTTL(t *testing.T) {
	const ttl, failoverTTL = 300 * time.Millisecond, 2 * time.Second
	c := newTestCluster(t, 3, withServerConfig(func(_ int, cfg *Config) {
		cfg.HeartbeatTTL, cfg.FailoverHeartbeatTTL = ttl, failoverTTL
	}))
	leader := c.WaitForLeader(5 * time.Second)
	node := gpuNode("n1", 1)
	registerNode(t, dialRPC(t, c.Followers()[0].RPCAddr()), node)
	waitFor(t, 5*time.Second, func() (bool, string) { return leader.heartbeats.armed(node.ID), "node's timer not armed on the leader" })

	c.Kill(c.Index(leader))
	next := c.WaitForLeader(10 * time.Second)
	// The duties start with the broker, then the timers: the silent node
	// gets the failover TTL, not its own.
	var gotTTL time.Duration
	var armedAt time.Time
	waitFor(t, 10*time.Second, func() (bool, string) {
		var ok bool
		gotTTL, armedAt, ok = next.heartbeats.armedWith(node.ID)
		return ok, "new leader armed no timer for the ready node"
	})
	if gotTTL != failoverTTL {
		t.Fatalf("new leader armed the node's timer with %v, want the failover TTL %v (TTL %v)", gotTTL, failoverTTL, ttl)
	}
	var downAfter time.Duration
	waitFor(t, failoverTTL+10*time.Second, func() (bool, string) {
		n, err := next.State().NodeByID(nil, node.ID)
		if err != nil || n == nil {
			return false, fmt.Sprintf("node: %v, %v", n, err)
		}
		downAfter = time.Since(armedAt)
		return n.Status == structs.NodeStatusDown, "silent node still " + n.Status
	})
	// Measured from the arming, which happened before: never too short.
	if downAfter < failoverTTL {
		t.Errorf("silent node marked down %v after its timer was armed, want no sooner than the failover TTL %v", downAfter, failoverTTL)
	}
}

// noNVML is a host without the NVIDIA driver.
func noNVML() nvml.Interface {
	return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
}

// startClient starts a real client agent with two simulated GPUs on
// servers, and shuts it down when the test ends (again if the test did).
func startClient(t *testing.T, name, dataDir string, servers []string, leaveTasksRunning bool) *client.Client {
	t.Helper()
	cfg := &client.Config{
		Name: name, DataDir: dataDir, Servers: servers, HTTPAddr: "127.0.0.1:4646",
		NVML: noNVML(), DevMode: true, DevGPUs: 2,
		UpdateInterval: 20 * time.Millisecond, RetryInterval: 50 * time.Millisecond,
		LeaveTasksRunning: leaveTasksRunning,
	}
	if os.Getenv("DROVER_TEST_LOG") != "" {
		cfg.Logger = testConfig(t).Logger.Named(name)
	}
	cl, err := client.NewClient(cfg)
	if err != nil {
		t.Fatalf("start client %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cl.Shutdown() })
	return cl
}

// nodeStatus reads a node's status on s, "" when it is missing.
func nodeStatus(t *testing.T, s *Server, id string) string {
	t.Helper()
	n, err := s.State().NodeByID(nil, id)
	if err != nil {
		t.Fatal(err)
	}
	if n == nil {
		return ""
	}
	return n.Status
}

// TestFailover_ClientKeepsNodeReadyThroughLeaderKill: a client that
// knows all three servers, connected to the leader, keeps its node ready
// while the leader is killed: it fails over to another server, which
// forwards its heartbeats to the new leader, and the node is never marked
// down, past the failover TTL too.
func TestFailover_ClientKeepsNodeReadyThroughLeaderKill(t *testing.T) {
	const ttl, failoverTTL = time.Second, 2 * time.Second
	c := newTestCluster(t, 3, withServerConfig(func(_ int, cfg *Config) {
		cfg.HeartbeatTTL, cfg.FailoverHeartbeatTTL = ttl, failoverTTL
	}))
	leader := c.WaitForLeader(5 * time.Second)
	servers := []string{leader.RPCAddr().String()} // first: the client connects to the leader
	for _, f := range c.Followers() {
		servers = append(servers, f.RPCAddr().String())
	}
	cl := startClient(t, "n1", drivertest.ReachableTempDir(t), servers, false)
	waitFor(t, 10*time.Second, func() (bool, string) {
		for _, i := range c.reachable() {
			if nodeStatus(t, c.Server(i), cl.NodeID()) != structs.NodeStatusReady {
				return false, "node not ready on " + c.Name(i)
			}
		}
		return true, ""
	})

	c.Kill(c.Index(leader))
	next := c.WaitForLeader(10 * time.Second)
	deadline := time.Now().Add(2 * failoverTTL)
	for time.Now().Before(deadline) {
		for _, i := range c.reachable() {
			if st := nodeStatus(t, c.Server(i), cl.NodeID()); st != structs.NodeStatusReady {
				t.Fatalf("node is %q on %s after the leader kill, want ready throughout", st, c.Name(i))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !next.heartbeats.armed(cl.NodeID()) {
		t.Error("the new leader has no timer for the node after the failover TTL: its heartbeats do not reach it")
	}
}

// nodeFailureJob is a service job of one raw_exec task on one GPU that
// prints its PID and sleeps.
func nodeFailureJob(id string) *structs.Job {
	job := &structs.Job{
		ID: id, Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: 1,
			Tasks: []*structs.Task{{
				Name: "t", Driver: "raw_exec",
				Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo $$; exec sleep 300"}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64,
					Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// runningAllocs returns the job's allocations whose client reports them
// running.
func runningAllocs(t *testing.T, s *Server, jobID string) []*structs.Allocation {
	t.Helper()
	all, err := s.State().AllocsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*structs.Allocation
	for _, a := range all {
		if a.ClientStatus == structs.AllocClientStatusRunning {
			out = append(out, a)
		}
	}
	return out
}

// taskPID reads the PID the task printed first in its log.
func taskPID(t *testing.T, cl *client.Client, allocID string) int {
	t.Helper()
	path, err := cl.LogPath(allocID, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	waitFor(t, 10*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0, "task printed no PID in " + path
	})
	return pid
}

// TestFailover_NodeFailure: of two clients, the one running a job's
// allocation stops heartbeating without deregistering (its agent stops,
// its task keeps running). Within its TTL and a grace period the server
// marks the node down, the allocation lost, and places a replacement on
// the other client, which runs it. Started again on the same data dir,
// the client re-attaches to the original task and stops it, as the
// servers want it stopped: the job then runs exactly once.
func TestFailover_NodeFailure(t *testing.T) {
	const ttl, grace = time.Second, 5 * time.Second
	cfg := testConfig(t)
	cfg.HeartbeatTTL = ttl
	s := startServer(t, cfg)
	servers := []string{s.RPCAddr().String()}
	dirs := map[string]string{"a": drivertest.ReachableTempDir(t), "b": drivertest.ReachableTempDir(t)}
	clients := map[string]*client.Client{
		"a": startClient(t, "a", dirs["a"], servers, true),
		"b": startClient(t, "b", dirs["b"], servers, true),
	}
	for _, cl := range clients {
		waitFor(t, 10*time.Second, func() (bool, string) {
			return nodeStatus(t, s, cl.NodeID()) == structs.NodeStatusReady, "client not registered"
		})
	}
	registerJob(t, s, nodeFailureJob("web"))
	var orig *structs.Allocation
	waitFor(t, 10*time.Second, func() (bool, string) {
		running := runningAllocs(t, s, "web")
		if len(running) != 1 {
			return false, fmt.Sprintf("%d allocations running, want 1", len(running))
		}
		orig = running[0]
		return true, ""
	})
	victim, survivor := "a", "b"
	if orig.NodeID == clients["b"].NodeID() {
		victim, survivor = "b", "a"
	}
	pid := taskPID(t, clients[victim], orig.ID)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	// The victim's agent stops: no more heartbeats, no deregistration.
	if err := clients[victim].Shutdown(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var repl *structs.Allocation
	waitFor(t, ttl+grace, func() (bool, string) {
		running := runningAllocs(t, s, "web")
		if len(running) != 1 || running[0].ID == orig.ID {
			return false, fmt.Sprintf("%d allocations running (original %s), want only a replacement", len(running), orig.ID)
		}
		repl = running[0]
		return true, ""
	})
	t.Logf("replacement running %s after the client stopped (TTL %s)", time.Since(stopped).Round(time.Millisecond), ttl)
	if repl.NodeID != clients[survivor].NodeID() {
		t.Errorf("replacement on node %s, want the surviving client's %s", repl.NodeID, clients[survivor].NodeID())
	}
	if st := nodeStatus(t, s, orig.NodeID); st != structs.NodeStatusDown {
		t.Errorf("silent node is %q, want down", st)
	}
	lost, err := s.State().AllocByID(nil, orig.ID)
	if err != nil || lost.ClientStatus != structs.AllocClientStatusLost || lost.DesiredStatus != structs.AllocDesiredStatusStop {
		t.Fatalf("original allocation: %+v (err %v), want client status lost, desired stop", lost, err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("original task %d died with its agent (%v); the test needs it still running", pid, err)
	}

	// Back on the same data dir, the client stops the original.
	back := startClient(t, victim, dirs[victim], servers, false)
	if back.NodeID() != orig.NodeID {
		t.Fatalf("restarted client has node ID %s, want %s", back.NodeID(), orig.NodeID)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		return syscall.Kill(pid, 0) != nil, fmt.Sprintf("original task %d still running after its node came back", pid)
	})
	waitFor(t, 10*time.Second, func() (bool, string) {
		return nodeStatus(t, s, orig.NodeID) == structs.NodeStatusReady, "node not ready again"
	})
	// The restarted client may report the original running (re-attached)
	// before it reports it stopped.
	waitFor(t, 10*time.Second, func() (bool, string) {
		running := runningAllocs(t, s, "web")
		a, _ := s.State().AllocByID(nil, orig.ID)
		return len(running) == 1 && running[0].ID == repl.ID && a.ClientTerminalStatus(),
			fmt.Sprintf("%d allocations running, original %s/%s; want only the replacement %s running", len(running), a.DesiredStatus, a.ClientStatus, repl.ID)
	})
	if a, _ := s.State().AllocByID(nil, orig.ID); a.DesiredStatus != structs.AllocDesiredStatusStop {
		t.Errorf("original allocation desired %s after the node came back, want stop", a.DesiredStatus)
	}
}
