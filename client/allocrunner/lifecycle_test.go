package allocrunner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

func hooked(t *structs.Task, hook string, sidecar bool) *structs.Task {
	t.Lifecycle = &structs.TaskLifecycleConfig{Hook: hook, Sidecar: sidecar}
	return t
}

var noRestarts = &structs.RestartPolicy{Attempts: 0, Mode: structs.RestartModeFail}

// startedAt is when a task first started; zero if it never did.
func startedAt(a *structs.Allocation, task string) time.Time { return a.TaskStates[task].StartedAt }

func finishedAt(a *structs.Allocation, task string) time.Time { return a.TaskStates[task].FinishedAt }

// TestLifecycleOrder runs every hook with real processes that check,
// through marker files in the shared data dir, that what must come
// before them has happened: the prestart task has exited before the
// main task starts, the prestart sidecar runs beside the main task, the
// poststart task starts while the main task runs, the poststop task runs
// after the main task and the sidecars are dead.
func TestLifecycleOrder(t *testing.T) {
	d := `"$NOMAD_ALLOC_DIR/data"`
	alloc := testAlloc(structs.JobTypeBatch, noRestarts,
		hooked(shTask("init", `sleep 0.2; touch `+d+`/init`), structs.TaskLifecycleHookPrestart, false),
		hooked(shTask("side", `touch `+d+`/side; exec sleep 60`), structs.TaskLifecycleHookPrestart, true),
		// main: init is done; it waits for the poststart task to see it running.
		shTask("main", `test -f `+d+`/init || exit 3; touch `+d+`/main-running;
			i=0; while [ ! -f `+d+`/post ]; do i=$((i+1)); [ $i -gt 200 ] && exit 4; sleep 0.05; done
			test -f `+d+`/side || exit 5; touch `+d+`/main-done`),
		hooked(shTask("post", `test -f `+d+`/main-running || exit 6; touch `+d+`/post`), structs.TaskLifecycleHookPoststart, false),
		hooked(shTask("cleanup", `test -f `+d+`/main-done || exit 7; touch `+d+`/cleanup`), structs.TaskLifecycleHookPoststop, false),
	)
	ar, rec := newRunner(t, alloc)
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q (%s), want complete; tasks: %s", got.ClientStatus, got.ClientDescription, describeTasks(got))
	}
	for _, f := range []string{"init", "side", "main-running", "post", "main-done", "cleanup"} {
		if _, err := os.Stat(filepath.Join(SharedDir(ar.AllocDir()), "data", f)); err != nil {
			t.Errorf("marker %s: %v", f, err)
		}
	}
	if !finishedAt(got, "init").Before(startedAt(got, "main")) && !finishedAt(got, "init").Equal(startedAt(got, "main")) {
		t.Errorf("init finished %v, after main started %v", finishedAt(got, "init"), startedAt(got, "main"))
	}
	if startedAt(got, "post").Before(startedAt(got, "main")) {
		t.Errorf("poststart started %v, before main %v", startedAt(got, "post"), startedAt(got, "main"))
	}
	if startedAt(got, "cleanup").Before(finishedAt(got, "side")) || startedAt(got, "cleanup").Before(finishedAt(got, "main")) {
		t.Errorf("poststop started %v, before side (%v) or main (%v) ended", startedAt(got, "cleanup"), finishedAt(got, "side"), finishedAt(got, "main"))
	}
	side := got.TaskStates["side"]
	if side.Failed || !slices.Contains(eventTypes(side), structs.TaskMainDead) {
		t.Errorf("sidecar: failed %v, events %v; want killed with %q", side.Failed, eventTypes(side), structs.TaskMainDead)
	}
	if s := rec.statuses(); slices.Contains(s, structs.AllocClientStatusFailed) {
		t.Errorf("statuses %v went through failed", s)
	}
}

func describeTasks(a *structs.Allocation) string {
	out := ""
	for name, s := range a.TaskStates {
		out += name + ":" + s.State + " " + fmtEvents(s) + "; "
	}
	return out
}

func fmtEvents(s *structs.TaskState) string {
	out := ""
	for _, e := range s.Events {
		out += e.Type + "(" + e.Message + ") "
	}
	return out
}

// TestLifecyclePrestartFailureFailsAlloc: a prestart task that fails
// past its restart policy fails the allocation; the main task never
// starts.
func TestLifecyclePrestartFailureFailsAlloc(t *testing.T) {
	alloc := testAlloc(structs.JobTypeBatch, noRestarts,
		hooked(shTask("init", `exit 1`), structs.TaskLifecycleHookPrestart, false),
		shTask("main", `touch "$NOMAD_ALLOC_DIR/data/main"`),
	)
	ar, _ := newRunner(t, alloc)
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusFailed {
		t.Fatalf("status %q, want failed", got.ClientStatus)
	}
	if !startedAt(got, "main").IsZero() || slices.Contains(eventTypes(got.TaskStates["main"]), structs.TaskStarted) {
		t.Errorf("main started: %s", fmtEvents(got.TaskStates["main"]))
	}
	if _, err := os.Stat(filepath.Join(SharedDir(ar.AllocDir()), "data", "main")); err == nil {
		t.Error("main ran")
	}
}

// TestLeaderEndStopsOthers: when the leader task exits, the other tasks
// are killed ("Leader Task Dead") and the allocation completes.
func TestLeaderEndStopsOthers(t *testing.T) {
	leader := shTask("leader", `sleep 0.2`)
	leader.Leader = true
	alloc := testAlloc(structs.JobTypeBatch, noRestarts, leader, shTask("worker", `exec sleep 60`))
	ar, _ := newRunner(t, alloc)
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q, want complete; %s", got.ClientStatus, describeTasks(got))
	}
	w := got.TaskStates["worker"]
	if w.Failed || !slices.Contains(eventTypes(w), structs.TaskLeaderDead) {
		t.Errorf("worker: failed %v, events %v; want killed with %q", w.Failed, eventTypes(w), structs.TaskLeaderDead)
	}
}

// TestStopRunsPoststop: in a service job, a prestart task that exits 0
// is not restarted, the allocation runs while its poststop task waits,
// and a stop kills the main task, then runs the poststop task.
func TestStopRunsPoststop(t *testing.T) {
	d := `"$NOMAD_ALLOC_DIR/data"`
	alloc := testAlloc(structs.JobTypeService, nil,
		hooked(shTask("init", `echo x >> `+d+`/init`), structs.TaskLifecycleHookPrestart, false),
		shTask("main", `exec sleep 60`),
		hooked(shTask("cleanup", `touch `+d+`/cleanup`), structs.TaskLifecycleHookPoststop, false),
	)
	ar, _ := newRunner(t, alloc)
	go ar.Run()
	waitFor(t, func() bool { return ar.Alloc().ClientStatus == structs.AllocClientStatusRunning })
	if s := ar.Alloc().TaskStates["cleanup"]; s.State != structs.TaskStatePending {
		t.Fatalf("poststop task %s while main runs", s.State)
	}
	ar.Kill("test stop")
	waitDone(t, ar)
	got := ar.Alloc()
	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q, want complete; %s", got.ClientStatus, describeTasks(got))
	}
	data := filepath.Join(SharedDir(ar.AllocDir()), "data")
	if _, err := os.Stat(filepath.Join(data, "cleanup")); err != nil {
		t.Errorf("poststop did not run: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "init")); string(b) != "x\n" {
		t.Errorf("prestart ran %q times, want once", b)
	}
	if got.TaskStates["init"].Restarts != 0 {
		t.Errorf("prestart restarted %d times", got.TaskStates["init"].Restarts)
	}
}

// TestStickyDataMovesFromPrevious: with a sticky ephemeral disk, the
// previous allocation's alloc/data on this node is moved into the new
// one before its tasks start, once the previous one is done.
func TestStickyDataMovesFromPrevious(t *testing.T) {
	alloc := testAlloc(structs.JobTypeBatch, noRestarts, shTask("main", `test "$(cat "$NOMAD_ALLOC_DIR/data/state")" = kept`))
	alloc.Job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 100, Sticky: true}
	alloc.PreviousAllocation = structs.GenerateUUID()
	ar, _ := newRunner(t, alloc)
	prevData := filepath.Join(SharedDir(filepath.Join(filepath.Dir(ar.AllocDir()), alloc.PreviousAllocation)), "data")
	if err := os.MkdirAll(prevData, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prevData, "state"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	prevDone := make(chan struct{})
	ar.prevDone = prevDone
	go ar.Run()
	select {
	case <-ar.WaitCh():
		t.Fatal("ran before the previous allocation was done")
	case <-time.After(50 * time.Millisecond):
	}
	close(prevDone)
	waitDone(t, ar)
	got := ar.Alloc()
	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q, want complete (the task saw the data); %s", got.ClientStatus, describeTasks(got))
	}
	if !slices.Contains(eventTypes(got.TaskStates["main"]), TaskStickyData) {
		t.Errorf("events %v, want %q", eventTypes(got.TaskStates["main"]), TaskStickyData)
	}
}

// TestRestoreAfterPrestart: a client restarted after the prestart task
// finished and before the main task started does not run the prestart
// task again and starts the main task.
func TestRestoreAfterPrestart(t *testing.T) {
	db := openState(t)
	dataDir := drivertest.ReachableTempDir(t)
	d := `"$NOMAD_ALLOC_DIR/data"`
	alloc := testAlloc(structs.JobTypeBatch, noRestarts,
		hooked(shTask("init", `echo x >> `+d+`/init`), structs.TaskLifecycleHookPrestart, false),
		shTask("main", `touch `+d+`/main`),
	)
	if err := db.PutAlloc(alloc); err != nil {
		t.Fatal(err)
	}
	done := &structs.TaskState{State: structs.TaskStateDead, StartedAt: time.Now(), FinishedAt: time.Now()}
	if err := db.PutTaskState(alloc.ID, "init", done); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTaskState(alloc.ID, "main", &structs.TaskState{State: structs.TaskStatePending}); err != nil {
		t.Fatal(err)
	}
	ar, _ := restoreRunner(t, db, dataDir, alloc.ID)
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q, want complete; %s", got.ClientStatus, describeTasks(got))
	}
	data := filepath.Join(SharedDir(ar.AllocDir()), "data")
	if _, err := os.Stat(filepath.Join(data, "init")); !os.IsNotExist(err) {
		t.Errorf("prestart ran again after the restart: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "main")); err != nil {
		t.Errorf("main did not run: %v", err)
	}
}
