package allocrunner

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

// gateClock is the real clock, except that a wait of exactly d ends
// only when the test closes gate; asked counts such waits.
type gateClock struct {
	realClock
	d     time.Duration
	gate  chan time.Time
	asked atomic.Int32
}

func (c *gateClock) After(d time.Duration) <-chan time.Time {
	if d == c.d {
		c.asked.Add(1)
		return c.gate
	}
	return c.realClock.After(d)
}

// TestShutdownDelay: a stopped task waits for its group's and its own
// shutdown_delay before it is signalled, says so, and is then killed as
// usual.
func TestShutdownDelay(t *testing.T) {
	task := shTask("server", `trap 'echo got-term; exit 0' TERM; echo up; while :; do sleep 0.05; done`)
	task.ShutdownDelay = time.Second
	alloc := testAlloc(structs.JobTypeService, nil, task)
	alloc.Job.TaskGroups[0].ShutdownDelay = 2 * time.Second
	clock := &gateClock{d: 3 * time.Second, gate: make(chan time.Time)}
	ar, err := New(&Config{
		Alloc: alloc, DataDir: drivertest.ReachableTempDir(t), Clock: clock,
		Drivers: map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
	})
	if err != nil {
		t.Fatal(err)
	}
	go ar.Run()
	waitFor(t, func() bool { return ar.Alloc().ClientStatus == structs.AllocClientStatusRunning })
	waitFor(t, func() bool {
		s, _ := os.ReadFile(LogPath(ar.AllocDir(), "server", false))
		return strings.Contains(string(s), "up")
	})

	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(stop)
	waitFor(t, func() bool { return clock.asked.Load() == 1 })
	ts := ar.Alloc().TaskStates["server"]
	if evs := eventTypes(ts); !slices.Contains(evs, TaskWaitingShutdownDelay) || slices.Contains(evs, structs.TaskKilling) {
		t.Fatalf("events while waiting: %v, want %q and no %q yet", evs, TaskWaitingShutdownDelay, structs.TaskKilling)
	}
	if ts.State != structs.TaskStateRunning {
		t.Errorf("task state %q during the delay, want running", ts.State)
	}
	close(clock.gate)
	waitDone(t, ar)

	ts = ar.Alloc().TaskStates["server"]
	evs := eventTypes(ts)
	want := []string{TaskWaitingShutdownDelay, structs.TaskKilling, structs.TaskTerminated, structs.TaskKilled}
	if tail := evs[len(evs)-4:]; !slices.Equal(tail, want) {
		t.Errorf("events %v, want them to end with %v", evs, want)
	}
	if out := readLog(t, ar, "server", false); !strings.Contains(out, "got-term") {
		t.Errorf("stdout %q, want the task to have been signalled after the delay", out)
	}
}

// TestLogsDisabled: a task with logs disabled runs and leaves no log.
func TestLogsDisabled(t *testing.T) {
	task := shTask("quiet", "echo hello; echo oops >&2")
	task.LogConfig = &structs.LogConfig{MaxFiles: 1, MaxFileSizeMB: 1, Disabled: true}
	alloc := testAlloc(structs.JobTypeBatch, nil, task)
	ar, _ := newRunner(t, alloc)
	if got := runToEnd(t, ar); got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q, want complete", got.ClientStatus)
	}
	for _, stderr := range []bool{false, true} {
		if _, err := os.Stat(LogPath(ar.AllocDir(), "quiet", stderr)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("log (stderr %t): %v, want none", stderr, err)
		}
	}
}

// TestKillAllSkipsShutdownDelay: a client shutting down kills its tasks
// at once; a job's shutdown_delay does not hold the agent.
func TestKillAllSkipsShutdownDelay(t *testing.T) {
	task := shTask("server", `echo up; while :; do sleep 0.05; done`)
	task.ShutdownDelay = time.Hour
	alloc := testAlloc(structs.JobTypeService, nil, task)
	ar, _ := newRunner(t, alloc)
	go ar.Run()
	waitFor(t, func() bool { return ar.Alloc().ClientStatus == structs.AllocClientStatusRunning })
	ar.KillAll("client shutting down")
	waitDone(t, ar)
	if evs := eventTypes(ar.Alloc().TaskStates["server"]); slices.Contains(evs, TaskWaitingShutdownDelay) {
		t.Errorf("events %v: a client shutdown waited for shutdown_delay", evs)
	}
}
