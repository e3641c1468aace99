package allocrunner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

const testTimeout = 10 * time.Second

// recorder collects the updates an AllocRunner reports.
type recorder struct {
	mu      sync.Mutex
	updates []*structs.Allocation
}

func (r *recorder) record(a *structs.Allocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, a)
}

func (r *recorder) statuses() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.updates {
		if len(out) == 0 || out[len(out)-1] != u.ClientStatus {
			out = append(out, u.ClientStatus)
		}
	}
	return out
}

func (r *recorder) last() *structs.Allocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.updates) == 0 {
		return nil
	}
	return r.updates[len(r.updates)-1]
}

// shTask is a raw_exec task running script.
func shTask(name, script string) *structs.Task {
	return &structs.Task{
		Name:   name,
		Driver: "raw_exec",
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
	}
}

// testAlloc returns a canonicalized allocation of a one-group job.
func testAlloc(jobType string, policy *structs.RestartPolicy, tasks ...*structs.Task) *structs.Allocation {
	job := &structs.Job{
		ID: "job1", Type: jobType, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, RestartPolicy: policy, Tasks: tasks}},
	}
	job.Canonicalize()
	alloc := &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, Name: structs.AllocName("job1", "g", 0),
		NodeID: "node1", JobID: job.ID, Job: job, TaskGroup: "g",
		DesiredStatus:      structs.AllocDesiredStatusRun,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{}},
	}
	for _, t := range tasks {
		alloc.AllocatedResources.Tasks[t.Name] = &structs.AllocatedTaskResources{}
	}
	return alloc
}

func newRunner(t *testing.T, alloc *structs.Allocation) (*AllocRunner, *recorder) {
	t.Helper()
	rec := &recorder{}
	ar, err := New(&Config{
		Alloc:    alloc,
		DataDir:  drivertest.ReachableTempDir(t),
		Drivers:  map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
		OnUpdate: rec.record,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ar, rec
}

// runToEnd runs ar and waits for it to finish.
func runToEnd(t *testing.T, ar *AllocRunner) *structs.Allocation {
	t.Helper()
	go ar.Run()
	waitDone(t, ar)
	return ar.Alloc()
}

func waitDone(t *testing.T, ar *AllocRunner) {
	t.Helper()
	select {
	case <-ar.WaitCh():
	case <-time.After(testTimeout):
		ar.Kill("test timeout")
		t.Fatalf("allocation did not finish in %v: %+v", testTimeout, ar.Alloc().TaskStates)
	}
}

func eventTypes(s *structs.TaskState) []string {
	var out []string
	for _, e := range s.Events {
		out = append(out, e.Type)
	}
	return out
}

func readLog(t *testing.T, ar *AllocRunner, task string, stderr bool) string {
	t.Helper()
	p, err := ar.LogPath(task, stderr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunTaskWithGPUs(t *testing.T) {
	task := shTask("main", `env | sort; echo "PWD=$(pwd -P)"; echo oops >&2`)
	task.Config["args"] = []any{"-c", task.Config["args"].([]any)[1].(string) + `; echo "ARG=$0"`, "${DROVER_TASK_NAME}-${NOMAD_ALLOC_INDEX}"}
	task.Env = map[string]string{"GREETING": "hello from ${DROVER_JOB_ID}"}
	alloc := testAlloc(structs.JobTypeBatch, nil, task)
	uuids := []string{"GPU-8a1f7ce0-0000-4000-8000-000000000001", "GPU-8a1f7ce0-0000-4000-8000-000000000002"}
	alloc.AllocatedResources.Tasks["main"].Devices = []*structs.AllocatedDeviceResource{
		{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3", DeviceIDs: uuids},
	}
	ar, rec := newRunner(t, alloc)
	got := runToEnd(t, ar)

	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Errorf("ClientStatus = %q (%s), want complete", got.ClientStatus, got.ClientDescription)
	}
	out := readLog(t, ar, "main", false)
	taskDir, _ := filepath.EvalSymlinks(TaskDir(ar.AllocDir(), "main"))
	for _, want := range []string{
		"NVIDIA_VISIBLE_DEVICES=" + strings.Join(uuids, ","),
		"CUDA_VISIBLE_DEVICES=" + strings.Join(uuids, ","),
		"DROVER_ALLOC_ID=" + alloc.ID,
		"NOMAD_ALLOC_ID=" + alloc.ID,
		"DROVER_JOB_NAME=job1",
		"DROVER_GROUP_NAME=g",
		"DROVER_TASK_NAME=main",
		"DROVER_ALLOC_INDEX=0",
		"DROVER_ALLOC_DIR=" + SharedDir(ar.AllocDir()),
		"DROVER_TASK_DIR=" + TaskDir(ar.AllocDir(), "main"),
		"GREETING=hello from job1",
		"PWD=" + taskDir,
		"ARG=main-0",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if errOut := readLog(t, ar, "main", true); errOut != "oops\n" {
		t.Errorf("stderr = %q, want %q", errOut, "oops\n")
	}
	ts := got.TaskStates["main"]
	wantEvents := []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted, structs.TaskTerminated, structs.TaskNotRestart}
	if g := eventTypes(ts); strings.Join(g, ",") != strings.Join(wantEvents, ",") {
		t.Errorf("events = %v, want %v", g, wantEvents)
	}
	if ts.State != structs.TaskStateDead || ts.Failed || ts.StartedAt.IsZero() || ts.FinishedAt.Before(ts.StartedAt) {
		t.Errorf("task state = %+v, want dead, not failed, started then finished", ts)
	}
	if st := rec.statuses(); strings.Join(st, ",") != "pending,running,complete" {
		t.Errorf("reported statuses = %v, want pending, running, complete", st)
	}
	if last := rec.last(); last.ID != alloc.ID || last.NodeID != "node1" || last.JobID != "job1" || last.Job != nil {
		t.Errorf("update = %+v, want ID, NodeID, JobID and no job", last)
	}
}

func TestRestartPolicyFail(t *testing.T) {
	policy := &structs.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: structs.RestartModeFail}
	alloc := testAlloc(structs.JobTypeBatch, policy, shTask("flaky", "echo run; exit 3"))
	ar, rec := newRunner(t, alloc)
	got := runToEnd(t, ar)

	ts := got.TaskStates["flaky"]
	if got.ClientStatus != structs.AllocClientStatusFailed || !ts.Failed || ts.Restarts != 2 {
		t.Errorf("status %q, task failed %v restarts %d; want failed, true, 2", got.ClientStatus, ts.Failed, ts.Restarts)
	}
	if out := readLog(t, ar, "flaky", false); out != "run\nrun\nrun\n" {
		t.Errorf("stdout = %q, want three runs appended", out)
	}
	count := map[string]int{}
	for _, e := range ts.Events {
		count[e.Type]++
		if e.Type == structs.TaskTerminated && e.ExitCode != 3 {
			t.Errorf("Terminated exit code = %d, want 3", e.ExitCode)
		}
	}
	if count[structs.TaskStarted] != 3 || count[structs.TaskRestarting] != 2 || count[structs.TaskNotRestart] != 1 {
		t.Errorf("event counts = %v, want 3 Started, 2 Restarting, 1 Not Restarting", count)
	}
	if last := ts.Events[len(ts.Events)-1]; !strings.Contains(last.Message, `Exceeded allowed attempts 2`) {
		t.Errorf("last event = %+v, want the policy's reason", last)
	}
	if st := rec.statuses(); st[len(st)-1] != structs.AllocClientStatusFailed {
		t.Errorf("last reported status = %v, want failed", st)
	}
}

func TestRestartPolicyDelayMode(t *testing.T) {
	// Fails twice, then succeeds; one attempt per 1s window. The window
	// must outlast two runs of sh on a loaded machine (100ms did not:
	// the second failure came after the window and was "within policy").
	policy := &structs.RestartPolicy{Attempts: 1, Interval: time.Second, Delay: 5 * time.Millisecond, Mode: structs.RestartModeDelay}
	script := `f="$DROVER_ALLOC_DIR/data/runs"; n=$(($(cat "$f" 2>/dev/null || echo 0) + 1)); echo $n > "$f"; [ $n -ge 3 ]`
	alloc := testAlloc(structs.JobTypeBatch, policy, shTask("t", script))
	ar, _ := newRunner(t, alloc)
	begin := time.Now()
	got := runToEnd(t, ar)
	ts := got.TaskStates["t"]
	if got.ClientStatus != structs.AllocClientStatusComplete || ts.Restarts != 2 {
		t.Fatalf("status %q restarts %d, want complete after 2 restarts; events %v", got.ClientStatus, ts.Restarts, eventTypes(ts))
	}
	var reasons []string
	for _, e := range ts.Events {
		if e.Type == structs.TaskRestarting {
			reasons = append(reasons, e.Details["restart_reason"])
			// Shown to people: whole milliseconds, not "7.992520667s".
			if d, err := time.ParseDuration(e.Details["restart_delay"]); err != nil || d != d.Round(time.Millisecond) {
				t.Errorf("restart_delay = %q, want a duration in whole milliseconds", e.Details["restart_delay"])
			}
		}
	}
	if len(reasons) != 2 || reasons[0] != ReasonWithinPolicy || !strings.Contains(reasons[1], `mode is "delay"`) {
		t.Errorf("restart reasons = %q, want within policy then delay mode", reasons)
	}
	if took := time.Since(begin); took < 500*time.Millisecond {
		t.Errorf("finished in %v; the delay mode should have waited for the window to close", took)
	}
}

func TestStopKillsTasks(t *testing.T) {
	task := shTask("server", `trap 'echo got-term; exit 0' TERM; echo up; while :; do sleep 0.05; done`)
	alloc := testAlloc(structs.JobTypeService, nil, task)
	alloc.Job.TaskGroups[0].Tasks[0].KillTimeout = 2 * time.Second
	ar, _ := newRunner(t, alloc)
	go ar.Run()
	waitFor(t, func() bool { return ar.Alloc().ClientStatus == structs.AllocClientStatusRunning })
	waitFor(t, func() bool {
		s, _ := os.ReadFile(LogPath(ar.AllocDir(), "server", false))
		return strings.Contains(string(s), "up")
	})

	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(stop)
	waitDone(t, ar)

	got := ar.Alloc()
	ts := got.TaskStates["server"]
	if got.ClientStatus != structs.AllocClientStatusComplete || ts.Failed || ts.State != structs.TaskStateDead {
		t.Errorf("status %q, task %+v; want complete, dead, not failed", got.ClientStatus, ts)
	}
	if got.DesiredStatus != structs.AllocDesiredStatusStop {
		t.Errorf("DesiredStatus = %q, want the update's stop", got.DesiredStatus)
	}
	evs := eventTypes(ts)
	want := []string{structs.TaskKilling, structs.TaskTerminated, structs.TaskKilled}
	if tail := evs[len(evs)-3:]; strings.Join(tail, ",") != strings.Join(want, ",") {
		t.Errorf("events = %v, want them to end with %v", evs, want)
	}
	if out := readLog(t, ar, "server", false); !strings.Contains(out, "got-term") {
		t.Errorf("stdout = %q, want the task to have seen SIGTERM", out)
	}
}

func TestSiblingFailureKillsOthers(t *testing.T) {
	policy := &structs.RestartPolicy{Attempts: 0, Mode: structs.RestartModeFail}
	alloc := testAlloc(structs.JobTypeBatch, policy,
		shTask("fails", "sleep 0.2; exit 1"),
		shTask("waits", "exec sleep 30"),
	)
	ar, _ := newRunner(t, alloc)
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusFailed {
		t.Errorf("ClientStatus = %q, want failed", got.ClientStatus)
	}
	waits := got.TaskStates["waits"]
	evs := strings.Join(eventTypes(waits), ",")
	if waits.Failed || waits.State != structs.TaskStateDead || !strings.Contains(evs, TaskSiblingFailed+","+structs.TaskKilling) {
		t.Errorf("sibling state %+v events %s; want dead, not failed, killed for the sibling", waits, evs)
	}
}

func TestKillBeforeRun(t *testing.T) {
	alloc := testAlloc(structs.JobTypeService, nil, shTask("t", "exec sleep 30"))
	ar, _ := newRunner(t, alloc)
	ar.Kill("shutting down")
	got := runToEnd(t, ar)
	ts := got.TaskStates["t"]
	if got.ClientStatus != structs.AllocClientStatusComplete || !ts.StartedAt.IsZero() {
		t.Errorf("status %q task %+v; want complete without ever starting", got.ClientStatus, ts)
	}
}

func TestSetupFailures(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(a *structs.Allocation)
		want   string
	}{
		{"no job", func(a *structs.Allocation) { a.Job = nil }, "carries no job"},
		{"unknown group", func(a *structs.Allocation) { a.TaskGroup = "nope" }, `no group "nope"`},
		{"unknown driver", func(a *structs.Allocation) { a.Job.TaskGroups[0].Tasks[0].Driver = "docker" }, `driver "docker" is not available`},
		{"task named alloc", func(a *structs.Allocation) { a.Job.TaskGroups[0].Tasks[0].Name = "alloc" }, `task name "alloc"`},
		{"task name with slash", func(a *structs.Allocation) { a.Job.TaskGroups[0].Tasks[0].Name = "../x" }, `task name "../x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alloc := testAlloc(structs.JobTypeBatch, nil, shTask("t", "exit 0"))
			alloc.Job = alloc.Job.Copy()
			tt.mutate(alloc)
			ar, rec := newRunner(t, alloc)
			got := runToEnd(t, ar)
			if got.ClientStatus != structs.AllocClientStatusFailed || !strings.Contains(got.ClientDescription, tt.want) {
				t.Errorf("status %q (%s), want failed mentioning %q", got.ClientStatus, got.ClientDescription, tt.want)
			}
			if last := rec.last(); last == nil || last.ClientStatus != structs.AllocClientStatusFailed {
				t.Errorf("last update = %+v, want failed reported", last)
			}
			for name, ts := range got.TaskStates {
				if !ts.Failed || ts.State != structs.TaskStateDead {
					t.Errorf("task %s state = %+v, want dead and failed", name, ts)
				}
			}
		})
	}
}

func TestLogPath(t *testing.T) {
	alloc := testAlloc(structs.JobTypeBatch, nil, shTask("t", "exit 0"))
	ar, _ := newRunner(t, alloc)
	p, err := ar.LogPath("t", true)
	if err != nil || p != filepath.Join(ar.AllocDir(), "alloc", "logs", "t.stderr.0") {
		t.Errorf("LogPath(t, stderr) = %q, %v", p, err)
	}
	if _, err := ar.LogPath("nope", false); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("LogPath(nope) error = %v, want ErrNotFound", err)
	}
}

func TestNewRejectsMissingInput(t *testing.T) {
	if _, err := New(&Config{DataDir: drivertest.ReachableTempDir(t)}); err == nil {
		t.Error("New without an allocation succeeded")
	}
	if _, err := New(&Config{Alloc: &structs.Allocation{ID: "a"}}); err == nil {
		t.Error("New without a data dir succeeded")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestInvalidDriverConfigIsNotRestarted: a config the driver refuses
// fails the task at once; waiting out the restart policy would only
// delay the same refusal.
func TestInvalidDriverConfigIsNotRestarted(t *testing.T) {
	policy := &structs.RestartPolicy{Attempts: 3, Interval: time.Hour, Delay: time.Minute, Mode: structs.RestartModeFail}
	task := &structs.Task{Name: "t", Driver: "raw_exec", Config: map[string]any{"args": []any{"no command"}}}
	ar, _ := newRunner(t, testAlloc(structs.JobTypeBatch, policy, task))
	got := runToEnd(t, ar)
	ts := got.TaskStates["t"]
	if got.ClientStatus != structs.AllocClientStatusFailed || !ts.Failed || ts.Restarts != 0 {
		t.Fatalf("status %q, task failed %v restarts %d; want failed at once", got.ClientStatus, ts.Failed, ts.Restarts)
	}
	last := ts.Events[len(ts.Events)-1]
	if last.Type != structs.TaskNotRestart || last.Message != ReasonUnrecoverable {
		t.Errorf("last event = %s %q, want %s %q", last.Type, last.Message, structs.TaskNotRestart, ReasonUnrecoverable)
	}
}
