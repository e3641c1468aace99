package allocrunner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	execdriver "github.com/droverhq/drover/drivers/exec"
	"github.com/droverhq/drover/structs"
)

// flakyEngine is a real exec driver behind an engine that does not
// answer re-attach, and the first kill, as a docker daemon in a hiccup
// would.
type flakyEngine struct {
	*execdriver.Driver
	mu    sync.Mutex
	kills int
}

var errNoAnswer = errors.New("engine did not answer")

func (f *flakyEngine) RecoverTask(*drivers.TaskHandle) error { return errNoAnswer }

func (f *flakyEngine) KillTask(ctx context.Context, h *drivers.TaskHandle) error {
	f.mu.Lock()
	f.kills++
	n := f.kills
	f.mu.Unlock()
	if n == 1 {
		return errNoAnswer
	}
	return f.Driver.KillTask(ctx, h)
}

// TestReattachFailureKillsTask: a task whose re-attach fails while it
// still runs is killed through the driver, from what its handle says
// (its cgroup), retrying a kill that fails; only then is it reported
// dead and failed, and its handle forgotten.
func TestReattachFailureKillsTask(t *testing.T) {
	probe := execdriver.New(nil, execdriver.Config{})
	if info := probe.Fingerprint(context.Background()); !info.Healthy {
		t.Skipf("exec isolation unavailable: %s", info.HealthDescription)
	}
	db, dataDir := openState(t), drivertest.ReachableTempDir(t)
	task := &structs.Task{Name: "t", Driver: "exec", Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo up; exec sleep 600"}}}
	alloc := testAlloc(structs.JobTypeService, nil, task)
	taskDir := filepath.Join(dataDir, "alloc", alloc.ID, "t")
	if err := os.MkdirAll(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := execdriver.New(nil, execdriver.Config{}) // the killed client's driver
	out := filepath.Join(dataDir, "out")
	h, err := old.Start(context.Background(), &drivers.TaskConfig{ID: alloc.ID + "/t/0", Config: task.Config, TaskDir: taskDir, StdoutPath: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Destroy(h.ID) })
	waitFor(t, func() bool { b, _ := os.ReadFile(out); return strings.Contains(string(b), "up") })
	cgroup := strings.Split(h.State["cgroup_dirs"], ":")[0]
	procs := func() string {
		b, _ := os.ReadFile(filepath.Join(cgroup, "cgroup.procs"))
		return strings.TrimSpace(string(b))
	}
	if procs() == "" {
		t.Fatal("task cgroup empty while it runs")
	}
	storeRunning(t, db, alloc, h)

	flaky := &flakyEngine{Driver: execdriver.New(nil, execdriver.Config{})}
	stored, _, _ := db.GetAllocs()
	rec := &recorder{}
	ar, err := New(&Config{
		Alloc: stored[0].Alloc, DataDir: dataDir, OnUpdate: rec.record, Store: db,
		Drivers: map[string]drivers.Driver{"exec": flaky},
		Restore: &Restored{TaskStates: stored[0].TaskStates, TaskHandles: stored[0].TaskHandles},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := runToEnd(t, ar)
	s := got.TaskStates["t"]
	ev := hasEvent(s, TaskReattachFailed)
	if got.ClientStatus != structs.AllocClientStatusFailed || ev == nil {
		t.Fatalf("status %q events %v, want failed with %q", got.ClientStatus, eventTypes(s), TaskReattachFailed)
	}
	if strings.Contains(ev.Message, "killing it failed") {
		t.Errorf("event %q: the retried kill succeeded", ev.Message)
	}
	if _, err := os.Stat(cgroup); err == nil {
		t.Errorf("task cgroup %s (procs %q) left after a failed re-attach", cgroup, procs())
	}
	pid, _ := strconv.Atoi(h.State["pid"])
	if !isZombie(pid) {
		t.Errorf("task init %d still runs after a failed re-attach", pid)
	}
	if flaky.kills != 2 {
		t.Errorf("KillTask called %d times, want 2 (one failure, one retry)", flaky.kills)
	}
	stored, _, _ = db.GetAllocs()
	if len(stored[0].TaskHandles) != 0 {
		t.Errorf("handles after failure: %v, want none", stored[0].TaskHandles)
	}
}
