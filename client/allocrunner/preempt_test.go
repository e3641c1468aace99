package allocrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestPreemptedTaskCheckpoints: a preempted allocation's task gets a
// Preempted event with its kill signal and grace time, finds the
// DROVER_PREEMPTED file in the shared dir when its signal arrives, and
// may use the grace time to checkpoint before it exits.
func TestPreemptedTaskCheckpoints(t *testing.T) {
	task := shTask("train", `trap 'cat "$DROVER_ALLOC_DIR/DROVER_PREEMPTED" > "$DROVER_ALLOC_DIR/data/seen"; sleep 0.2; echo checkpointed; exit 0' INT; echo up; while :; do sleep 0.05; done`)
	task.KillSignal = "SIGINT"
	alloc := testAlloc(structs.JobTypeBatch, nil, task)
	alloc.Job.TaskGroups[0].Tasks[0] = task
	task.KillTimeout = 3 * time.Second
	ar, _ := newRunner(t, alloc)
	go ar.Run()
	waitFor(t, func() bool {
		s, _ := os.ReadFile(LogPath(ar.AllocDir(), "train", false))
		return strings.Contains(string(s), "up")
	})

	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	stop.PreemptedByAllocation = "high-1"
	stop.DesiredDescription = `preempted by allocation high-1 of job "high" (priority 80)`
	ar.Update(stop)
	waitDone(t, ar)

	ts := ar.Alloc().TaskStates["train"]
	var ev *structs.TaskEvent
	for _, e := range ts.Events {
		if e.Type == structs.TaskPreempted {
			ev = e
		}
	}
	if ev == nil {
		t.Fatalf("events %v, want a %s event", eventTypes(ts), structs.TaskPreempted)
	}
	if ev.Details["kill_signal"] != "SIGINT" || ev.Details["kill_timeout"] != "3s" || ev.Details[structs.EnvPreempted] != "1" {
		t.Errorf("Preempted details = %v, want SIGINT, 3s and %s=1", ev.Details, structs.EnvPreempted)
	}
	if !strings.Contains(ev.Message, "high-1") || !strings.Contains(ev.Message, "3s to checkpoint") {
		t.Errorf("Preempted message = %q, want the preemptor and the grace time", ev.Message)
	}
	seen, err := os.ReadFile(filepath.Join(SharedDir(ar.AllocDir()), "data", "seen"))
	if err != nil || strings.TrimSpace(string(seen)) != "1" {
		t.Errorf("task saw DROVER_PREEMPTED = %q (%v), want 1", seen, err)
	}
	if out := readLog(t, ar, "train", false); !strings.Contains(out, "checkpointed") {
		t.Errorf("stdout = %q, want the task to have checkpointed in its grace time", out)
	}
}
