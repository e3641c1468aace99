package allocrunner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/client/state"
	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

func openState(t *testing.T) *state.DB {
	t.Helper()
	db, err := state.Open(state.Path(drivertest.ReachableTempDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// restoreRunner builds a runner from what db holds for alloc, as a
// restarted client does, with a fresh raw_exec driver.
func restoreRunner(t *testing.T, db *state.DB, dataDir, allocID string) (*AllocRunner, *recorder) {
	t.Helper()
	stored, _, err := db.GetAllocs()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stored {
		if s.Alloc.ID != allocID {
			continue
		}
		rec := &recorder{}
		ar, err := New(&Config{
			Alloc: s.Alloc, DataDir: dataDir, OnUpdate: rec.record, Store: db,
			Drivers: map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
			Restore: &Restored{TaskStates: s.TaskStates, TaskHandles: s.TaskHandles},
		})
		if err != nil {
			t.Fatal(err)
		}
		return ar, rec
	}
	t.Fatalf("alloc %s not stored", allocID)
	return nil, nil
}

// storeRunning stores alloc with task "t" running under handle h, as a
// client that was killed would have left it.
func storeRunning(t *testing.T, db *state.DB, alloc *structs.Allocation, h *drivers.TaskHandle) {
	t.Helper()
	ts := &structs.TaskState{State: structs.TaskStateRunning, StartedAt: time.Now(), Events: []*structs.TaskEvent{{Type: structs.TaskStarted}}}
	if err := db.PutAlloc(alloc); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTaskState(alloc.ID, "t", ts); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTaskHandle(alloc.ID, "t", h); err != nil {
		t.Fatal(err)
	}
}

func hasEvent(s *structs.TaskState, typ string) *structs.TaskEvent {
	for _, e := range s.Events {
		if e.Type == typ {
			return e
		}
	}
	return nil
}

// TestRestoreReattachesRunningTask: a restored runner re-attaches to the
// process an earlier client started (no second start), and Kill stops it.
func TestRestoreReattachesRunningTask(t *testing.T) {
	db, dataDir := openState(t), drivertest.ReachableTempDir(t)
	alloc := testAlloc(structs.JobTypeService, nil, shTask("t", "exec sleep 600"))
	old := rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true}) // the killed client's driver
	h, err := old.Start(context.Background(), &drivers.TaskConfig{
		ID: alloc.ID + "/t/0", Config: alloc.Job.TaskGroups[0].Tasks[0].Config, TaskDir: drivertest.ReachableTempDir(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Destroy(h.ID) })
	pid, _ := strconv.Atoi(h.State["pid"])
	storeRunning(t, db, alloc, h)

	ar, _ := restoreRunner(t, db, dataDir, alloc.ID)
	go ar.Run()
	waitFor(t, func() bool { return hasEvent(ar.Alloc().TaskStates["t"], TaskReattached) != nil })
	got := ar.Alloc()
	if got.ClientStatus != structs.AllocClientStatusRunning || hasEvent(got.TaskStates["t"], structs.TaskSetup) != nil {
		t.Errorf("status %q events %v, want running, re-attached without a new setup", got.ClientStatus, eventTypes(got.TaskStates["t"]))
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("task %d not running after restore", pid)
	}
	ar.Kill("test over")
	waitDone(t, ar)
	if syscall.Kill(pid, 0) == nil && !isZombie(pid) {
		t.Errorf("task %d still runs after Kill of the restored runner", pid)
	}
	s := ar.Alloc().TaskStates["t"]
	if s.State != structs.TaskStateDead || hasEvent(s, structs.TaskKilled) == nil || hasEvent(s, structs.TaskStarted) == nil {
		t.Errorf("task state %s events %v, want dead and killed", s.State, eventTypes(s))
	}
}

// TestRestoreLostTaskFails: a task whose process cannot be found again
// is dead and failed, with the reason in its event.
func TestRestoreLostTaskFails(t *testing.T) {
	db, dataDir := openState(t), drivertest.ReachableTempDir(t)
	alloc := testAlloc(structs.JobTypeService, nil, shTask("t", "exec sleep 600"))
	storeRunning(t, db, alloc, &drivers.TaskHandle{ID: alloc.ID + "/t/0", Driver: "raw_exec", State: map[string]string{
		"pid": "999999", "shim_pid": "999999", "shim_start": "1", "status_file": filepath.Join(drivertest.ReachableTempDir(t), "none"),
	}})
	ar, _ := restoreRunner(t, db, dataDir, alloc.ID)
	got := runToEnd(t, ar)
	s := got.TaskStates["t"]
	ev := hasEvent(s, TaskReattachFailed)
	if got.ClientStatus != structs.AllocClientStatusFailed || !s.Failed || ev == nil {
		t.Fatalf("status %q failed %v events %v, want failed with %q", got.ClientStatus, s.Failed, eventTypes(s), TaskReattachFailed)
	}
	if !strings.HasPrefix(ev.Message, "could not re-attach after client restart: ") {
		t.Errorf("event message = %q", ev.Message)
	}
	if n := strings.Count(strings.Join(eventTypes(s), ","), structs.TaskStarted); n != 1 {
		t.Errorf("events %v: %d Started, want only the stored one (no new start)", eventTypes(s), n)
	}
	stored, _, _ := db.GetAllocs()
	if len(stored[0].TaskHandles) != 0 || stored[0].TaskStates["t"].State != structs.TaskStateDead {
		t.Errorf("stored after failure: handles %v state %s, want none and dead", stored[0].TaskHandles, stored[0].TaskStates["t"].State)
	}
}

// TestRestoreDeadTaskStaysDead: a finished task is not run again.
func TestRestoreDeadTaskStaysDead(t *testing.T) {
	db, dataDir := openState(t), drivertest.ReachableTempDir(t)
	alloc := testAlloc(structs.JobTypeBatch, nil, shTask("t", "exit 0"))
	if err := db.PutAlloc(alloc); err != nil {
		t.Fatal(err)
	}
	dead := &structs.TaskState{State: structs.TaskStateDead, Events: []*structs.TaskEvent{{Type: structs.TaskTerminated}}}
	if err := db.PutTaskState(alloc.ID, "t", dead); err != nil {
		t.Fatal(err)
	}
	ar, rec := restoreRunner(t, db, dataDir, alloc.ID)
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusComplete || len(got.TaskStates["t"].Events) != 1 {
		t.Errorf("status %q events %v, want complete and untouched", got.ClientStatus, eventTypes(got.TaskStates["t"]))
	}
	if last := rec.last(); last == nil || last.ClientStatus != structs.AllocClientStatusComplete {
		t.Errorf("last update = %+v, want the restored status reported", last)
	}
}

// TestStorePersistsHandleWhileRunning: the running attempt's handle is
// stored while it runs and forgotten once it ended; states follow.
func TestStorePersistsHandleWhileRunning(t *testing.T) {
	db := openState(t)
	alloc := testAlloc(structs.JobTypeService, nil, shTask("t", "exec sleep 600"))
	ar, err := New(&Config{
		Alloc: alloc, DataDir: drivertest.ReachableTempDir(t), Store: db,
		Drivers: map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
	})
	if err != nil {
		t.Fatal(err)
	}
	go ar.Run()
	var h *drivers.TaskHandle
	waitFor(t, func() bool {
		stored, _, _ := db.GetAllocs()
		if len(stored) == 1 {
			h = stored[0].TaskHandles["t"]
		}
		return h != nil
	})
	if h.ID != alloc.ID+"/t/0" || h.State["pid"] == "" {
		t.Errorf("stored handle = %+v, want attempt 0 with a pid", h)
	}
	ar.Kill("done")
	waitDone(t, ar)
	stored, _, _ := db.GetAllocs()
	if len(stored[0].TaskHandles) != 0 {
		t.Errorf("handles after the task ended = %v, want none", stored[0].TaskHandles)
	}
	if s := stored[0].TaskStates["t"]; s == nil || s.State != structs.TaskStateDead || hasEvent(s, structs.TaskKilled) == nil {
		t.Errorf("stored state = %+v, want dead with Killed", s)
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}
