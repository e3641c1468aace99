package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// taskRunner runs one task: start, wait, restart per policy, kill.
type taskRunner struct {
	ar       *AllocRunner
	task     *structs.Task
	driver   drivers.Driver
	restarts *restartTracker
	logger   hclog.Logger

	killOnce   sync.Once
	killCh     chan struct{}
	killType   string // event type recorded before Killing
	killReason string
}

func newTaskRunner(ar *AllocRunner, task *structs.Task, d drivers.Driver, rt *restartTracker) *taskRunner {
	return &taskRunner{
		ar:       ar,
		task:     task,
		driver:   d,
		restarts: rt,
		logger:   ar.logger.With("task", task.Name),
		killCh:   make(chan struct{}),
	}
}

// kill asks the task to stop; the first call wins. eventType is
// structs.TaskKilling or TaskSiblingFailed.
func (tr *taskRunner) kill(eventType, reason string) {
	tr.killOnce.Do(func() {
		tr.killType, tr.killReason = eventType, reason
		close(tr.killCh)
	})
}

func (tr *taskRunner) killed() bool {
	select {
	case <-tr.killCh:
		return true
	default:
		return false
	}
}

// emit appends an event and applies fn to the task's state, atomically.
func (tr *taskRunner) emit(ev *structs.TaskEvent, fn func(s *structs.TaskState)) {
	ev.Time = tr.ar.clock.Now().UnixNano()
	if ev.DisplayMessage == "" {
		ev.DisplayMessage = ev.Message
	}
	tr.ar.mutate(tr.task.Name, func(s *structs.TaskState) {
		appendEvent(s, ev)
		if fn != nil {
			fn(s)
		}
	})
}

// becomeDead records the task's end.
func (tr *taskRunner) becomeDead(failed bool) func(s *structs.TaskState) {
	now := tr.ar.clock.Now()
	return func(s *structs.TaskState) {
		s.State, s.Failed, s.FinishedAt = structs.TaskStateDead, failed, now
	}
}

func (tr *taskRunner) run() {
	tr.emit(&structs.TaskEvent{Type: structs.TaskSetup, Message: "Building Task Directory"}, nil)
	for attempt := 0; ; attempt++ {
		if tr.killed() {
			tr.emit(&structs.TaskEvent{Type: structs.TaskKilled, Message: "Task killed while not running: " + tr.killReason}, tr.becomeDead(false))
			return
		}
		res, wasKilled := tr.runOnce(attempt)
		if wasKilled {
			return
		}
		if errors.Is(res.Err, drivers.ErrInvalidConfig) {
			// The same config would fail the same way on every restart.
			tr.emit(&structs.TaskEvent{Type: structs.TaskNotRestart, Message: ReasonUnrecoverable}, tr.becomeDead(true))
			return
		}
		d := tr.restarts.next(tr.ar.clock.Now(), res)
		if !d.restart {
			tr.emit(&structs.TaskEvent{Type: structs.TaskNotRestart, Message: d.reason}, tr.becomeDead(d.failed))
			return
		}
		delay := d.delay.Round(time.Millisecond).String()
		tr.emit(&structs.TaskEvent{
			Type:    structs.TaskRestarting,
			Message: fmt.Sprintf("%s; restarting in %s", d.reason, delay),
			Details: map[string]string{"restart_reason": d.reason, "restart_delay": delay},
		}, func(s *structs.TaskState) {
			s.State = structs.TaskStatePending
			s.Restarts++
			s.LastRestart = tr.ar.clock.Now()
		})
		select {
		case <-tr.ar.clock.After(d.delay):
		case <-tr.killCh:
		}
	}
}

// runOnce starts the task and waits for it to exit or be killed.
// wasKilled reports that the task is dead by a kill and nothing follows.
func (tr *taskRunner) runOnce(attempt int) (res *drivers.ExitResult, wasKilled bool) {
	cfg := tr.taskConfig(attempt)
	if _, err := tr.driver.Start(context.Background(), cfg); err != nil {
		tr.logger.Warn("task start", "error", err)
		tr.emit(&structs.TaskEvent{Type: structs.TaskDriverFail, Message: err.Error()}, nil)
		return &drivers.ExitResult{ExitCode: -1, Err: err}, false
	}
	defer func() {
		if err := tr.driver.Destroy(cfg.ID); err != nil {
			tr.logger.Warn("task destroy", "error", err)
		}
	}()
	tr.emit(&structs.TaskEvent{Type: structs.TaskStarted, Message: "Task started by client"}, func(s *structs.TaskState) {
		s.State = structs.TaskStateRunning
		if s.StartedAt.IsZero() {
			s.StartedAt = tr.ar.clock.Now()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitCh, err := tr.driver.Wait(ctx, cfg.ID)
	if err != nil {
		tr.emit(&structs.TaskEvent{Type: structs.TaskDriverFail, Message: err.Error()}, nil)
		return &drivers.ExitResult{ExitCode: -1, Err: err}, false
	}
	select {
	case res = <-waitCh:
		tr.emit(terminatedEvent(res), nil)
		return res, false
	case <-tr.killCh:
	}
	tr.stop(cfg.ID, waitCh)
	return nil, true
}

// stop kills the running task with its kill signal and timeout and
// records Killing, Terminated and Killed.
func (tr *taskRunner) stop(id string, waitCh <-chan *drivers.ExitResult) {
	if tr.killType == TaskSiblingFailed {
		tr.emit(&structs.TaskEvent{Type: TaskSiblingFailed, Message: tr.killReason}, nil)
	}
	tr.emit(&structs.TaskEvent{
		Type:    structs.TaskKilling,
		Message: fmt.Sprintf("Sent interrupt (%s), waiting %v before force kill: %s", killSignal(tr.task), tr.task.KillTimeout, tr.killReason),
		Details: map[string]string{"kill_timeout": tr.task.KillTimeout.String(), "kill_signal": killSignal(tr.task), "kill_reason": tr.killReason},
	}, nil)
	if err := tr.driver.Stop(id, tr.task.KillTimeout, tr.task.KillSignal); err != nil {
		tr.logger.Warn("task stop", "error", err)
	}
	if res, ok := <-waitCh; ok {
		tr.emit(terminatedEvent(res), nil)
	}
	tr.emit(&structs.TaskEvent{Type: structs.TaskKilled, Message: "Task successfully killed"}, tr.becomeDead(false))
}

func killSignal(t *structs.Task) string {
	if t.KillSignal == "" {
		return "SIGTERM"
	}
	return t.KillSignal
}

func terminatedEvent(res *drivers.ExitResult) *structs.TaskEvent {
	ev := &structs.TaskEvent{
		Type:     structs.TaskTerminated,
		ExitCode: res.ExitCode,
		Signal:   res.Signal,
		Details:  map[string]string{"exit_code": strconv.Itoa(res.ExitCode)},
	}
	switch {
	case res.Err != nil:
		ev.Message = "Exit unknown: " + res.Err.Error()
	case res.Signal != 0:
		ev.Message = fmt.Sprintf("Exit Code: %d, Signal: %d (%s)", res.ExitCode, res.Signal, syscall.Signal(res.Signal))
		ev.Details["signal"] = strconv.Itoa(res.Signal)
	default:
		ev.Message = fmt.Sprintf("Exit Code: %d", res.ExitCode)
	}
	if res.OOMKilled {
		ev.Message += ", OOM Killed"
		ev.Details["oom_killed"] = "true"
	}
	return ev
}

// taskConfig builds what the driver gets for one attempt.
func (tr *taskRunner) taskConfig(attempt int) *drivers.TaskConfig {
	ar := tr.ar
	ar.mu.Lock()
	alloc := ar.alloc
	ar.mu.Unlock()
	taskDir := TaskDir(ar.allocDir, tr.task.Name)
	env := TaskEnv(alloc, tr.task, ar.allocDir, taskDir)
	jobName := alloc.JobID
	if alloc.Job != nil {
		jobName = alloc.Job.Name
	}
	return &drivers.TaskConfig{
		ID:         fmt.Sprintf("%s/%s/%d", alloc.ID, tr.task.Name, attempt),
		AllocID:    alloc.ID,
		JobName:    jobName,
		TaskName:   tr.task.Name,
		Env:        env,
		Config:     InterpolateConfig(tr.task.Config, env),
		TaskDir:    taskDir,
		StdoutPath: LogPath(ar.allocDir, tr.task.Name, false),
		StderrPath: LogPath(ar.allocDir, tr.task.Name, true),
		Resources:  taskResources(alloc, tr.task.Name),
		DeviceIDs:  DeviceIDs(alloc, tr.task.Name),
	}
}
