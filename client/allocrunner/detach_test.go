package allocrunner

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

// gatedDriver is raw_exec whose Start, once the process runs, waits for
// release before it returns: the window in which a task runs but its
// handle is not saved yet.
type gatedDriver struct {
	*rawexec.Driver
	started chan *drivers.TaskHandle
	release chan struct{}
}

func (d *gatedDriver) Start(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	h, err := d.Driver.Start(ctx, cfg)
	if err == nil {
		d.started <- h
		<-d.release
	}
	return h, err
}

// TestDetachWaitsForStartAndLeavesTasks: Detach waits for a task caught
// between its start and the saving of its handle and start, so both are
// stored; the runner then ends without killing, destroying or
// forgetting the task, saves and reports nothing more, and a runner
// restored from the store re-attaches to the same process.
func TestDetachWaitsForStartAndLeavesTasks(t *testing.T) {
	db, dataDir := openState(t), drivertest.ReachableTempDir(t)
	alloc := testAlloc(structs.JobTypeService, nil, shTask("t", "exec sleep 600"))
	d := &gatedDriver{Driver: rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true}), started: make(chan *drivers.TaskHandle, 1), release: make(chan struct{})}
	rec := &recorder{}
	ar, err := New(&Config{
		Alloc: alloc, DataDir: dataDir, Store: db, OnUpdate: rec.record,
		Drivers: map[string]drivers.Driver{"raw_exec": d},
	})
	if err != nil {
		t.Fatal(err)
	}
	go ar.Run()
	var h *drivers.TaskHandle
	select {
	case h = <-d.started:
	case <-time.After(testTimeout):
		t.Fatal("task did not start")
	}
	pid, _ := strconv.Atoi(h.State["pid"])
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	detached := make(chan struct{})
	go func() {
		ar.Detach()
		close(detached)
	}()
	select {
	case <-detached:
		t.Fatal("Detach returned while a start was not saved yet")
	case <-time.After(100 * time.Millisecond):
	}
	close(d.release)
	select {
	case <-detached:
	case <-time.After(testTimeout):
		t.Fatal("Detach did not return after the start ended")
	}
	waitDone(t, ar)

	stored, _, err := db.GetAllocs()
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored allocations %v, %v; want one", stored, err)
	}
	if sh := stored[0].TaskHandles["t"]; sh == nil || sh.ID != h.ID || sh.State["pid"] != h.State["pid"] {
		t.Fatalf("stored handle %+v, want the started attempt %+v", sh, h)
	}
	if syscall.Kill(pid, 0) != nil || isZombie(pid) {
		t.Fatalf("task %d died when its runner detached", pid)
	}
	updates := len(rec.statuses())
	time.Sleep(50 * time.Millisecond)
	if n := len(rec.statuses()); n != updates {
		t.Errorf("%d reports after Detach, want none", n-updates)
	}

	restored, _ := restoreRunner(t, db, dataDir, alloc.ID)
	go restored.Run()
	waitFor(t, func() bool { return hasEvent(restored.Alloc().TaskStates["t"], TaskReattached) != nil })
	restored.Kill("test over")
	waitDone(t, restored)
	if syscall.Kill(pid, 0) == nil && !isZombie(pid) {
		t.Errorf("task %d still runs after the restored runner killed it", pid)
	}
	// The start was saved before Detach returned (with its time, which
	// max_run_time counts from); a second one means it started again.
	s := restored.Alloc().TaskStates["t"]
	if n := strings.Count(strings.Join(eventTypes(s), ","), structs.TaskStarted); n != 1 || s.StartedAt.IsZero() {
		t.Errorf("restored events %v, started at %v: want the one start, saved with its time", eventTypes(s), s.StartedAt)
	}
}
