package allocrunner

import (
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestMaxRunTimeKillsAndFails: a batch task still running when the job's
// max_run_time passes is killed, says why, and fails.
func TestMaxRunTimeKillsAndFails(t *testing.T) {
	alloc := testAlloc(structs.JobTypeBatch, &structs.RestartPolicy{Mode: structs.RestartModeFail}, shTask("long", "exec sleep 30"))
	alloc.Job.MaxRunTime = 300 * time.Millisecond
	ar, _ := newRunner(t, alloc)
	begin := time.Now()
	got := runToEnd(t, ar)
	took := time.Since(begin)
	ts := got.TaskStates["long"]
	if got.ClientStatus != structs.AllocClientStatusFailed || !ts.Failed {
		t.Errorf("status %q, task failed %t; want failed", got.ClientStatus, ts.Failed)
	}
	if evs := eventTypes(ts); !slices.Contains(evs, TaskMaxRunTimeExceeded) {
		t.Errorf("events %v, want %q", evs, TaskMaxRunTimeExceeded)
	}
	if took < 300*time.Millisecond || took > 20*time.Second {
		t.Errorf("ended after %v, want soon after the 300ms max_run_time", took)
	}
}

// TestMaxRunTimeLetsShortTasksFinish: a task that ends in time completes.
func TestMaxRunTimeLetsShortTasksFinish(t *testing.T) {
	alloc := testAlloc(structs.JobTypeBatch, nil, shTask("short", "true"))
	alloc.Job.MaxRunTime = time.Minute
	ar, _ := newRunner(t, alloc)
	if got := runToEnd(t, ar); got.ClientStatus != structs.AllocClientStatusComplete {
		t.Errorf("status %q, want complete", got.ClientStatus)
	}
}
