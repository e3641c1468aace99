package client

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

const testTimeout = 10 * time.Second

// noNVML is a host without the NVIDIA driver.
func noNVML() nvml.Interface {
	return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
}

func testConfig(t *testing.T, servers ...string) *Config {
	return &Config{
		Name:           "test-node",
		DataDir:        drivertest.ReachableTempDir(t),
		Servers:        servers,
		HTTPAddr:       "127.0.0.1:4646",
		Meta:           map[string]string{"rack": "r1"},
		NVML:           noNVML(),
		DevMode:        true,
		DevGPUs:        2,
		UpdateInterval: 20 * time.Millisecond,
		RetryInterval:  20 * time.Millisecond,
	}
}

func startClient(t *testing.T, cfg *Config) *Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Shutdown() })
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// batchAlloc is an allocation of a one-task raw_exec batch job.
func batchAlloc(nodeID, script string, gpus ...string) *structs.Allocation {
	job := &structs.Job{
		ID: "job-" + structs.ShortID(structs.GenerateUUID()), Type: structs.JobTypeBatch, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: 1,
			RestartPolicy: &structs.RestartPolicy{Attempts: 0, Mode: structs.RestartModeFail},
			Tasks: []*structs.Task{{
				Name: "t", Driver: "raw_exec",
				Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
			}},
		}},
	}
	job.Canonicalize()
	res := &structs.AllocatedTaskResources{Cpu: structs.AllocatedCpuResources{CpuShares: 100}}
	if len(gpus) > 0 {
		res.Devices = []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: simulated.DefaultModel, DeviceIDs: gpus}}
	}
	return &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, Name: structs.AllocName(job.ID, "g", 0),
		NodeID: nodeID, JobID: job.ID, Job: job, TaskGroup: "g",
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{"t": res}},
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
	}
}

func TestRegisterAndHeartbeat(t *testing.T) {
	srv := newFakeServer(t, 200*time.Millisecond)
	cfg := testConfig(t, srv.addr())
	cfg.Topology = &structs.NodeTopology{Block: "nvl72-07", Rack: "r12"}
	c := startClient(t, cfg)
	waitFor(t, "registration and two heartbeats", func() bool {
		r, h := srv.counts()
		return r == 1 && h >= 2
	})
	n := srv.node(c.NodeID())
	if n == nil {
		t.Fatal("server has no node with the client's ID")
	}
	if n.Name != "test-node" || n.Datacenter != "dc1" || n.HTTPAddr != "127.0.0.1:4646" || n.Meta["rack"] != "r1" {
		t.Errorf("node = %s/%s/%s meta %v, want test-node/dc1/127.0.0.1:4646 rack r1", n.Name, n.Datacenter, n.HTTPAddr, n.Meta)
	}
	if n.Attributes["driver.raw_exec"] != "1" || n.Drivers["raw_exec"] == nil || !n.Drivers["raw_exec"].Healthy {
		t.Errorf("raw_exec not fingerprinted: attrs %v drivers %v", n.Attributes, n.Drivers)
	}
	if n.TopologyValue(structs.TopologyBlock) != "nvl72-07" || n.TopologyValue(structs.TopologyRack) != "r12" ||
		n.TopologyValue(structs.TopologySpine) != "" {
		t.Errorf("topology attributes: got %v, want block nvl72-07 and rack r12 only", n.Attributes)
	}
	if n.Attributes["kernel.name"] == "" || n.NodeResources.Cpu.CpuShares <= 0 || n.NodeResources.Memory.MemoryMB <= 0 {
		t.Errorf("host not fingerprinted: %v %+v", n.Attributes, n.NodeResources)
	}
	total, healthy := n.GPUCount()
	if total != 2 || healthy != 2 {
		t.Fatalf("node has %d GPUs (%d healthy), want 2 simulated in dev mode", total, healthy)
	}
	g := n.NodeResources.Devices[0]
	if g.Name != "NVIDIA H100 80GB HBM3" || g.Attributes["simulated"] != "true" || g.Attributes["memory"] != "80 GiB" {
		t.Errorf("dev GPUs = %s %v, want simulated H100 80 GiB", g.Name, g.Attributes)
	}
}

func TestRunAllocReportsStatus(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	c := startClient(t, testConfig(t, srv.addr()))
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })
	gpus := c.Node().NodeResources.Devices[0].SortedDeviceIDs()

	ok := batchAlloc(c.NodeID(), `echo "NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"`, gpus...)
	bad := batchAlloc(c.NodeID(), `echo failing >&2; exit 3`)
	srv.putAlloc(ok)
	srv.putAlloc(bad)

	waitFor(t, "both allocations reported terminal", func() bool {
		return srv.alloc(ok.ID).ClientTerminalStatus() && srv.alloc(bad.ID).ClientTerminalStatus()
	})
	if got := srv.alloc(ok.ID); got.ClientStatus != structs.AllocClientStatusComplete {
		t.Errorf("ok alloc status = %q (%s), want complete", got.ClientStatus, got.ClientDescription)
	}
	got := srv.alloc(bad.ID)
	if got.ClientStatus != structs.AllocClientStatusFailed {
		t.Errorf("bad alloc status = %q, want failed", got.ClientStatus)
	}
	var exitCode = -1
	for _, e := range got.TaskStates["t"].Events {
		if e.Type == structs.TaskTerminated {
			exitCode = e.ExitCode
		}
	}
	if exitCode != 3 {
		t.Errorf("reported Terminated exit code = %d, want 3; events %+v", exitCode, got.TaskStates["t"].Events)
	}
	// Updates carry only the client-owned fields.
	for _, u := range srv.updatesFor(bad.ID) {
		if u.Job != nil || u.AllocatedResources != nil || u.NodeID != c.NodeID() || u.JobID != bad.JobID {
			t.Errorf("update carries more or less than the client's fields: %+v", u)
		}
	}

	path, err := c.LogPath(ok.ID, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(path)
	if want := "NVIDIA_VISIBLE_DEVICES=" + strings.Join(gpus, ",") + "\n"; string(out) != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if path, _ := c.LogPath(bad.ID, "t", true); !strings.HasSuffix(path, filepath.Join(bad.ID, "alloc", "logs", "t.stderr.0")) {
		t.Errorf("stderr path = %q", path)
	}
}

func TestStopAlloc(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	c := startClient(t, testConfig(t, srv.addr()))
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })
	a := batchAlloc(c.NodeID(), "exec sleep 30")
	srv.putAlloc(a)
	waitFor(t, "running reported", func() bool { return srv.alloc(a.ID).ClientStatus == structs.AllocClientStatusRunning })

	stop := srv.alloc(a.ID)
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	srv.putAlloc(stop)
	waitFor(t, "stopped alloc reported complete", func() bool { return srv.alloc(a.ID).ClientStatus == structs.AllocClientStatusComplete })
	evs := srv.alloc(a.ID).TaskStates["t"].Events
	if last := evs[len(evs)-1]; last.Type != structs.TaskKilled {
		t.Errorf("last event = %q, want Killed", last.Type)
	}
}

// TestReportsAllocsStoppedBeforeTheyRan: an allocation the servers
// stopped while it was still pending is reported complete, once, without
// running; one already finished gets no update; neither gets a dir.
func TestReportsAllocsStoppedBeforeTheyRan(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	c := startClient(t, testConfig(t, srv.addr()))
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })
	stopped := batchAlloc(c.NodeID(), "echo should-not-run")
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	finished := batchAlloc(c.NodeID(), "echo should-not-run")
	finished.ClientStatus = structs.AllocClientStatusComplete
	// Listed running, but this client has no runner for it (it lost its
	// state, and killed the tasks): stopped, it is reported complete too.
	untracked := batchAlloc(c.NodeID(), "echo should-not-run")
	untracked.DesiredStatus = structs.AllocDesiredStatusStop
	untracked.ClientStatus = structs.AllocClientStatusRunning
	marker := batchAlloc(c.NodeID(), "exit 0")
	srv.putAlloc(stopped)
	srv.putAlloc(finished)
	srv.putAlloc(untracked)
	srv.putAlloc(marker)
	waitFor(t, "stopped allocs reported complete", func() bool {
		return srv.alloc(stopped.ID).ClientStatus == structs.AllocClientStatusComplete &&
			srv.alloc(untracked.ID).ClientStatus == structs.AllocClientStatusComplete
	})
	if u := srv.updatesFor(untracked.ID); len(u) != 1 || u[0].ClientDescription != DescStoppedUntracked {
		t.Errorf("untracked stopped alloc updates = %+v, want one saying %q", u, DescStoppedUntracked)
	}
	// Later answers list it again, pending as a view from before the
	// report landed shows it: no second report.
	srv.set(func(s *fakeServer) {
		s.allocs[stopped.ID].ClientStatus = structs.AllocClientStatusPending
		s.allocs[stopped.ID].ModifyIndex = s.bumpLocked()
	})
	again := batchAlloc(c.NodeID(), "exit 0")
	srv.putAlloc(again)
	waitFor(t, "later allocs complete", func() bool {
		return srv.alloc(marker.ID).ClientStatus == structs.AllocClientStatusComplete &&
			srv.alloc(again.ID).ClientStatus == structs.AllocClientStatusComplete
	})

	if got := srv.alloc(stopped.ID).ClientStatus; got != structs.AllocClientStatusPending {
		t.Errorf("stopped alloc status = %q after the rewind, want pending (no second report)", got)
	}
	got := srv.updatesFor(stopped.ID)[0]
	if got.ClientDescription != DescStoppedBeforeRun {
		t.Errorf("stopped alloc description = %q, want %q", got.ClientDescription, DescStoppedBeforeRun)
	}
	ts := got.TaskStates["t"]
	if ts == nil || ts.State != structs.TaskStateDead || ts.Failed || len(ts.Events) != 1 || ts.Events[0].Type != structs.TaskKilled {
		t.Errorf("stopped alloc task state = %+v, want dead, not failed, one Killed event", ts)
	}
	if u := srv.updatesFor(stopped.ID); len(u) != 1 {
		t.Errorf("stopped alloc got %d updates, want 1", len(u))
	}
	if u := srv.updatesFor(finished.ID); len(u) != 0 {
		t.Errorf("finished alloc got %d updates, want none", len(u))
	}
	for _, a := range []*structs.Allocation{stopped, finished} {
		if _, err := os.Stat(filepath.Join(c.cfg.DataDir, "alloc", a.ID)); !os.IsNotExist(err) {
			t.Errorf("alloc dir of %s exists (err %v); it should never have run", a.ID, err)
		}
	}
}

func TestReregistersWhenServerForgetsNode(t *testing.T) {
	srv := newFakeServer(t, 100*time.Millisecond)
	c := startClient(t, testConfig(t, srv.addr()))
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })
	srv.forgetNode(c.NodeID())
	waitFor(t, "second registration", func() bool { r, _ := srv.counts(); return r == 2 })
	if srv.node(c.NodeID()) == nil {
		t.Error("node not registered again")
	}
}

func TestServerFailover(t *testing.T) {
	// The first server is gone: its port refuses connections.
	down := newFakeServer(t, time.Second)
	downAddr := down.addr()
	down.close()
	srv := newFakeServer(t, time.Second)
	c := startClient(t, testConfig(t, downAddr, srv.addr()))
	waitFor(t, "registration with the second server", func() bool { r, _ := srv.counts(); return r == 1 })
	if srv.node(c.NodeID()) == nil {
		t.Error("node not registered")
	}
}

func TestNodeIDPersists(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	c1, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id, secret := c1.NodeID(), c1.Node().SecretID
	gpus := c1.Node().NodeResources.Devices[0].SortedDeviceIDs()
	c1.Shutdown()
	c2 := startClient(t, cfg)
	if c2.NodeID() != id || c2.Node().SecretID != secret {
		t.Errorf("restarted client has ID %s secret %s, want %s %s", c2.NodeID(), c2.Node().SecretID, id, secret)
	}
	if got := c2.Node().NodeResources.Devices[0].SortedDeviceIDs(); strings.Join(got, ",") != strings.Join(gpus, ",") {
		t.Errorf("simulated GPU IDs changed across restart: %v then %v", gpus, got)
	}
	b, _ := os.ReadFile(filepath.Join(cfg.DataDir, "client-id"))
	if strings.TrimSpace(string(b)) != id {
		t.Errorf("client-id file = %q, want %q", b, id)
	}
}

func TestShutdownKillsTasks(t *testing.T) {
	baseline := runtime.NumGoroutine()
	srv := newFakeServer(t, time.Second)
	c, err := NewClient(testConfig(t, srv.addr()))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })
	a := batchAlloc(c.NodeID(), `echo $$; exec sleep 30`)
	srv.putAlloc(a)
	path, _ := c.LogPath(a.ID, "t", false)
	var pid int
	waitFor(t, "task pid", func() bool {
		b, _ := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("task %d still runs after Shutdown", pid)
	}
	// The final status went out before the connection closed.
	if got := srv.alloc(a.ID); got.ClientStatus != structs.AllocClientStatusComplete {
		t.Errorf("final reported status = %q, want complete", got.ClientStatus)
	}
	// Every goroutine the client started has ended. The fake server's
	// go too once it is closed (a blocked Node.GetAllocs waits for it).
	srv.close()
	deadline := time.Now().Add(testTimeout)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the client started:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNVMLGPUsWinOverDevMode(t *testing.T) {
	cfg := testConfig(t) // no servers: registration just retries
	cfg.NVML = dgxa100.New()
	c := startClient(t, cfg)
	total, _ := c.Node().GPUCount()
	groups := c.Node().NodeResources.Devices
	if total != 8 || len(groups) != 1 || groups[0].Attributes["simulated"] != "" {
		t.Errorf("node GPUs = %d in %d groups, want the 8 NVML A100s and no simulated ones", total, len(groups))
	}
}

func TestSimulatedAddToNVML(t *testing.T) {
	cfg := testConfig(t)
	cfg.NVML = dgxa100.New()
	cfg.SimulatedGPUs = []simulated.Config{{Count: 4, Model: "NVIDIA B200"}}
	c := startClient(t, cfg)
	if total, _ := c.Node().GPUCount(); total != 12 {
		t.Errorf("node has %d GPUs, want 8 NVML + 4 simulated", total)
	}
}

func TestLogPathRejectsTraversal(t *testing.T) {
	c := startClient(t, testConfig(t))
	for _, tt := range []struct{ alloc, task string }{{"..", "t"}, {"a/b", "t"}, {"a", "../x"}, {"", "t"}, {"a", ""}} {
		if _, err := c.LogPath(tt.alloc, tt.task, false); err == nil {
			t.Errorf("LogPath(%q, %q) succeeded, want an error", tt.alloc, tt.task)
		}
	}
}

// TestFinalUpdateRetriedAtShutdown: the status of tasks killed at
// shutdown reaches the servers even when the first send of it breaks.
func TestFinalUpdateRetriedAtShutdown(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	cfg.UpdateInterval = time.Hour // only the shutdown flush sends updates
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })
	a := batchAlloc(c.NodeID(), `echo started; exec sleep 30`)
	srv.putAlloc(a)
	path, _ := c.LogPath(a.ID, "t", false)
	waitFor(t, "task start", func() bool { b, _ := os.ReadFile(path); return len(b) > 0 })
	srv.set(func(s *fakeServer) { s.breakUpdates = 1 })
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	got := srv.alloc(a.ID)
	if got.ClientStatus != structs.AllocClientStatusComplete || got.TaskStates["t"] == nil || got.TaskStates["t"].State != structs.TaskStateDead {
		t.Errorf("server has status %q, tasks %v; want complete with task t dead", got.ClientStatus, got.TaskStates)
	}
}

// TestUpdatesBackOffWhileRefused: a server refusing updates gets one
// try per RetryInterval, not one per UpdateInterval.
func TestUpdatesBackOffWhileRefused(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	cfg.UpdateInterval = 5 * time.Millisecond
	cfg.RetryInterval = 200 * time.Millisecond
	c := startClient(t, cfg)
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })
	srv.set(func(s *fakeServer) { s.refuseUpdates = true })
	srv.putAlloc(batchAlloc(c.NodeID(), `exec sleep 30`))
	time.Sleep(600 * time.Millisecond) // measuring a rate: nothing to poll for
	var calls int
	srv.set(func(s *fakeServer) { calls, s.refuseUpdates = s.updateCalls, false })
	if calls < 1 || calls > 5 {
		t.Errorf("%d update calls in 600ms while refused, want 1 to 5 (one per 200ms retry interval)", calls)
	}
}

// TestStaleAllocsAnswerKillsNothing: an answer older than one the client
// already acted on (a lagging server) must not stop allocations that the
// older view does not know yet.
func TestStaleAllocsAnswerKillsNothing(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	cfg.MaxQueryTime = 50 * time.Millisecond
	c := startClient(t, cfg)
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r == 1 })
	var before uint64
	srv.set(func(s *fakeServer) { before = s.index })
	a := batchAlloc(c.NodeID(), `exec sleep 30`)
	srv.putAlloc(a)
	waitFor(t, "allocation running", func() bool {
		got := srv.alloc(a.ID)
		return got != nil && got.ClientStatus == structs.AllocClientStatusRunning
	})
	// The lagging server answers its old view when queries time out, then
	// catches up part of the way, still without the allocation.
	srv.rewind(before, a.ID)
	staleAnswers := func(n int) {
		var calls int
		srv.set(func(s *fakeServer) { calls = s.getAllocsCalls })
		waitFor(t, "stale answers", func() bool {
			var now int
			srv.set(func(s *fakeServer) { now = s.getAllocsCalls })
			return now >= calls+n
		})
	}
	staleAnswers(2)
	srv.set(func(s *fakeServer) { s.bumpLocked() })
	staleAnswers(2)
	c.allocMu.Lock()
	r := c.runners[a.ID]
	c.allocMu.Unlock()
	if r == nil {
		t.Fatal("the client forgot the allocation")
	}
	if st := r.ar.Alloc().TaskStates["t"]; st.State != structs.TaskStateRunning {
		t.Errorf("task is %q after a stale answer, want still running; events %v", st.State, st.Events)
	}
}
