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
	"time"

	"github.com/droverhq/drover/client/state"
	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	execdriver "github.com/droverhq/drover/drivers/exec"
	"github.com/droverhq/drover/structs"
)

// flakyEngine is a real exec driver behind an engine that does not
// answer re-attach, and its first failKills kills, as a docker daemon in
// a hiccup would.
type flakyEngine struct {
	*execdriver.Driver
	failKills int
	mu        sync.Mutex
	kills     int
}

var errNoAnswer = errors.New("engine did not answer")

func (f *flakyEngine) RecoverTask(*drivers.TaskHandle) error { return errNoAnswer }

func (f *flakyEngine) KillTask(ctx context.Context, h *drivers.TaskHandle) error {
	f.mu.Lock()
	f.kills++
	n := f.kills
	f.mu.Unlock()
	if n <= f.failKills {
		return errNoAnswer
	}
	return f.Driver.KillTask(ctx, h)
}

func (f *flakyEngine) killCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kills
}

// TestReattachFailureKillsTask: a task whose re-attach fails while it
// still runs is killed through the driver, from what its handle says
// (its cgroup), retrying a kill that fails for as long as it takes (the
// task holds its GPUs meanwhile); only then is it reported dead and
// failed, and its handle forgotten.
func TestReattachFailureKillsTask(t *testing.T) {
	fastKillRetries(t)
	// More failures than the tries left once a task is asked to die.
	flaky := runUnattached(t, unattachedKillTries+2, false)
	if got, want := flaky.engine.killCount(), unattachedKillTries+3; got != want {
		t.Errorf("KillTask called %d times, want %d (every failure retried, then the kill)", got, want)
	}
	if strings.Contains(flaky.event.Message, "killing it failed") {
		t.Errorf("event %q: the retried kill succeeded", flaky.event.Message)
	}
	if _, err := os.Stat(flaky.cgroup); err == nil {
		t.Errorf("task cgroup %s left after a failed re-attach", flaky.cgroup)
	}
	if !isZombie(flaky.pid) {
		t.Errorf("task init %d still runs after a failed re-attach", flaky.pid)
	}
}

// TestReattachFailureKillGivesUpWhenStopped: while the kill keeps
// failing, the allocation is not reported dead; once it is asked to die
// (its allocation stopped), a long wait between tries is cut short and
// exactly unattachedKillTries more tries fail before it is reported
// failed saying the kill failed.
func TestReattachFailureKillGivesUpWhenStopped(t *testing.T) {
	fastKillRetries(t)
	unattachedKillBackoff, unattachedKillMaxWait = 10*time.Minute, 10*time.Minute // the stop must wake it
	flaky := runUnattached(t, 1<<30, true)
	if !strings.Contains(flaky.event.Message, "killing it failed") {
		t.Errorf("event %q: want it to say the kill failed", flaky.event.Message)
	}
	if n, want := flaky.engine.killCount(), flaky.killsBeforeStop+unattachedKillTries; n != want {
		t.Errorf("KillTask called %d times, want %d (%d before the stop, then %d)", n, want, flaky.killsBeforeStop, unattachedKillTries)
	}
}

func fastKillRetries(t *testing.T) {
	backoff, maxWait, dying := unattachedKillBackoff, unattachedKillMaxWait, unattachedKillDyingWait
	unattachedKillBackoff, unattachedKillMaxWait, unattachedKillDyingWait = time.Millisecond, 5*time.Millisecond, time.Millisecond
	t.Cleanup(func() {
		unattachedKillBackoff, unattachedKillMaxWait, unattachedKillDyingWait = backoff, maxWait, dying
	})
}

type unattached struct {
	engine          *flakyEngine
	killsBeforeStop int
	event           *structs.TaskEvent
	cgroup          string
	pid             int
}

// runUnattached starts a real exec task with one driver, restores its
// allocation with another whose engine fails re-attach and failKills
// kills, and runs it to the end; with stop, the allocation is killed
// once several kills failed (and the runner must still be running).
func runUnattached(t *testing.T, failKills int, stop bool) unattached {
	t.Helper()
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

	flaky := &flakyEngine{Driver: execdriver.New(nil, execdriver.Config{}), failKills: failKills}
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
	if !stop {
		got := runToEnd(t, ar)
		return checkUnattached(t, db, got, flaky, cgroup, h)
	}
	go ar.Run()
	waitFor(t, func() bool { return flaky.killCount() >= 1 })
	select {
	case <-ar.WaitCh():
		t.Fatal("allocation finished while the kill of its task kept failing")
	default:
	}
	if s := ar.Alloc().TaskStates["t"]; s == nil || s.State == structs.TaskStateDead {
		t.Fatalf("task state %+v while its kill keeps failing, want not dead", s)
	}
	before := flaky.killCount()
	ar.Kill("stopped by the servers")
	waitDone(t, ar)
	u := checkUnattached(t, db, ar.Alloc(), flaky, cgroup, h)
	u.killsBeforeStop = before
	return u
}

func checkUnattached(t *testing.T, db *state.DB, got *structs.Allocation, flaky *flakyEngine, cgroup string, h *drivers.TaskHandle) unattached {
	t.Helper()
	s := got.TaskStates["t"]
	ev := hasEvent(s, TaskReattachFailed)
	if got.ClientStatus != structs.AllocClientStatusFailed || ev == nil {
		t.Fatalf("status %q events %v, want failed with %q", got.ClientStatus, eventTypes(s), TaskReattachFailed)
	}
	stored, _, _ := db.GetAllocs()
	if len(stored[0].TaskHandles) != 0 {
		t.Errorf("handles after failure: %v, want none", stored[0].TaskHandles)
	}
	pid, _ := strconv.Atoi(h.State["pid"])
	return unattached{engine: flaky, event: ev, cgroup: cgroup, pid: pid}
}
