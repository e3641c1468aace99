package allocrunner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestRestartTaskOnRequest restarts a running task whose policy allows
// no restarts: the requested restart runs it again (a second line in its
// file) and is not counted against the policy (the allocation keeps
// running instead of failing).
func TestRestartTaskOnRequest(t *testing.T) {
	noRestarts := &structs.RestartPolicy{Attempts: 0, Interval: time.Hour, Mode: structs.RestartModeFail}
	ar, _ := newRunner(t, testAlloc(structs.JobTypeService, noRestarts, shTask("t", "echo run >> runs; exec sleep 30")))
	go ar.Run()
	defer waitDone(t, ar)
	defer ar.Kill("test over")
	runs := filepath.Join(TaskDir(ar.AllocDir(), "t"), "runs")
	countRuns := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run\n")
	}
	waitFor(t, func() bool { return countRuns() == 1 && ar.Alloc().TaskStates["t"].State == structs.TaskStateRunning })

	if err := ar.RestartTask("t", "config changed"); err != nil {
		t.Fatalf("RestartTask: %v", err)
	}
	waitFor(t, func() bool { return countRuns() == 2 && ar.Alloc().TaskStates["t"].State == structs.TaskStateRunning })

	got := ar.Alloc()
	ts := got.TaskStates["t"]
	if got.ClientStatus != structs.AllocClientStatusRunning || ts.Restarts != 1 {
		t.Errorf("got status %s restarts %d, want running with 1 restart", got.ClientStatus, ts.Restarts)
	}
	var signaled *structs.TaskEvent
	for _, ev := range ts.Events {
		if ev.Type == TaskRestartSignaled {
			signaled = ev
		}
	}
	if signaled == nil || signaled.Message != "config changed" {
		t.Fatalf("got events %v, want a %s event with the reason", eventTypes(ts), TaskRestartSignaled)
	}
	wantTail := []string{TaskRestartSignaled, structs.TaskTerminated, structs.TaskRestarting, structs.TaskStarted}
	if types := eventTypes(ts); !strings.HasSuffix(strings.Join(types, ","), strings.Join(wantTail, ",")) {
		t.Errorf("got events %v, want them to end with %v", types, wantTail)
	}
}

func TestRestartTaskErrors(t *testing.T) {
	ar, _ := newRunner(t, testAlloc(structs.JobTypeBatch, nil, shTask("t", "exit 0")))
	runToEnd(t, ar)
	tests := []struct {
		name string
		task string
		want error
	}{
		{"unknown task", "nope", ErrUnknownTask},
		{"finished task", "t", ErrTaskNotRunning},
		{"no running task", "", ErrTaskNotRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ar.RestartTask(tt.task, ""); !errors.Is(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
