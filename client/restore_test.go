package client

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/drivers"
	execdriver "github.com/droverhq/drover/drivers/exec"
	"github.com/droverhq/drover/structs"
)

// TestRestartReattachesTasks: a client shut down with LeaveTasksRunning
// and started again on the same data dir re-attaches to the task it left
// running, does not start it a second time when the servers send the
// allocation again, and stops it when the servers ask.
func TestRestartReattachesTasks(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	cfg.LeaveTasksRunning = true
	c1, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r >= 1 })
	a := batchAlloc(c1.NodeID(), `echo $$; exec sleep 30`)
	srv.putAlloc(a)
	path, _ := c1.LogPath(a.ID, "t", false)
	var pid int
	waitFor(t, "task pid", func() bool {
		b, _ := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("task %d died with LeaveTasksRunning", pid)
	}

	cfg2 := *cfg
	cfg2.LeaveTasksRunning = false // whatever happens, this one's tasks die with it
	startClient(t, &cfg2)
	waitFor(t, "re-attached task reported", func() bool {
		for _, u := range srv.updatesFor(a.ID) {
			// Any report, not the first: one may go out before the
			// runner has worked out the status.
			if ts := u.TaskStates["t"]; ts != nil && len(ts.Events) > 0 && ts.Events[len(ts.Events)-1].Type == allocrunner.TaskReattached &&
				u.ClientStatus == structs.AllocClientStatusRunning {
				return true
			}
		}
		return false
	})
	// Make the servers answer again with the same allocation: the
	// restored runner is reused, nothing starts a second copy.
	stop := srv.alloc(a.ID).Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	srv.putAlloc(stop)
	waitFor(t, "task killed on the servers' stop", func() bool { return syscall.Kill(pid, 0) != nil })
	b, _ := os.ReadFile(path)
	if lines := strings.Fields(string(b)); len(lines) != 1 {
		t.Errorf("task log %q: want exactly one start", b)
	}
}

// TestRestartReattachesExecTask: as TestRestartReattachesTasks, for an
// isolated exec task: the next client (new drivers) re-attaches to it
// through the stored handle, runs no second copy, and kills it (its
// cgroup emptied and removed) when the servers stop the allocation.
func TestRestartReattachesExecTask(t *testing.T) {
	if info := execdriver.New(nil, execdriver.Config{}).Fingerprint(context.Background()); !info.Healthy {
		t.Skipf("exec isolation unavailable: %s", info.HealthDescription)
	}
	srv := newFakeServer(t, time.Second)
	cfg := testConfig(t, srv.addr())
	cfg.Drivers = map[string]drivers.Driver{execdriver.Name: execdriver.New(nil, execdriver.Config{})}
	cfg.LeaveTasksRunning = true
	c1, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "registration", func() bool { r, _ := srv.counts(); return r >= 1 })
	a := batchAlloc(c1.NodeID(), `echo up; exec sleep 600`)
	a.Job.TaskGroups[0].Tasks[0].Driver = execdriver.Name
	srv.putAlloc(a)
	path, _ := c1.LogPath(a.ID, "t", false)
	waitFor(t, "task up", func() bool { b, _ := os.ReadFile(path); return strings.Count(string(b), "up") == 1 })
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	cgroup := storedHandles(t, cfg.DataDir, a.ID)["t"].State["cgroup_dirs"]
	if !cgroupHasProcs(cgroup) {
		t.Fatal("exec task died with LeaveTasksRunning")
	}
	t.Cleanup(func() {
		if !cgroupGone(cgroup) {
			t.Errorf("cgroup %s left", cgroup)
		}
	})

	cfg2 := *cfg
	cfg2.Drivers = map[string]drivers.Driver{execdriver.Name: execdriver.New(nil, execdriver.Config{})}
	cfg2.LeaveTasksRunning = false
	startClient(t, &cfg2)
	waitFor(t, "re-attached task reported", func() bool {
		for _, u := range srv.updatesFor(a.ID) {
			if ts := u.TaskStates["t"]; ts != nil && len(ts.Events) > 0 && ts.Events[len(ts.Events)-1].Type == allocrunner.TaskReattached {
				return true
			}
		}
		return false
	})
	stop := srv.alloc(a.ID).Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	srv.putAlloc(stop)
	waitFor(t, "task killed on the servers' stop", func() bool { return cgroupGone(cgroup) })
	if b, _ := os.ReadFile(path); strings.Count(string(b), "up") != 1 {
		t.Errorf("task log %q: want exactly one start", b)
	}
}
