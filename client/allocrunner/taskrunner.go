package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
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

	// restoredHandle is the running attempt an earlier client left, to
	// re-attach to instead of starting (see resume).
	restoredHandle *drivers.TaskHandle

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
// structs.TaskKilling, TaskSiblingFailed or structs.TaskPreempted.
func (tr *taskRunner) kill(eventType, reason string) {
	if tr.ar.isDetached() {
		return // the task is the next client's now
	}
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
	resumed, attempt, done := tr.resume()
	if done {
		return
	}
	for ; ; attempt++ {
		var res *drivers.ExitResult
		var wasKilled bool
		if resumed != nil {
			res, wasKilled = resumed()
			resumed = nil
		} else {
			if tr.killed() {
				if tr.killType == structs.TaskPreempted || tr.killType == TaskMaxRunTimeExceeded {
					tr.emit(&structs.TaskEvent{Type: tr.killType, Message: tr.killReason}, nil)
				}
				tr.emit(&structs.TaskEvent{Type: structs.TaskKilled, Message: "Task killed while not running: " + tr.killReason},
					tr.becomeDead(tr.killType == TaskMaxRunTimeExceeded))
				return
			}
			res, wasKilled = tr.runOnceOrRestart(attempt) // restart_request.go
		}
		tr.noteCheckpoint()
		if err := tr.ar.checkpoint.prune(); err != nil { // checkpoint.go: keep
			tr.ar.logger.Warn("checkpoint keep", "task", tr.task.Name, "error", err)
		}
		if wasKilled {
			return
		}
		if errors.Is(res.Err, drivers.ErrInvalidConfig) || errors.Is(res.Err, drivers.ErrDisabled) {
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
		case <-tr.ar.detachCh:
			return
		}
	}
}

// resume decides how run begins. A fresh task records Task Setup and
// starts at attempt 0. A restored one keeps its stored state: a dead task
// is done; one with a running attempt is re-attached through the driver,
// and resumed waits on that attempt, with attempts numbered on from it;
// if re-attaching fails, the task is dead and failed.
func (tr *taskRunner) resume() (resumed func() (*drivers.ExitResult, bool), attempt int, done bool) {
	if !tr.ar.restored {
		tr.emit(&structs.TaskEvent{Type: structs.TaskSetup, Message: "Building Task Directory"}, nil)
		return nil, 0, false
	}
	if tr.state() == structs.TaskStateDead {
		return nil, 0, true
	}
	h := tr.restoredHandle
	if h == nil {
		// It was between attempts (or never started): start afresh.
		return nil, 0, false
	}
	if err := tr.reattach(h); err != nil {
		tr.logger.Warn("re-attach after client restart", "task_id", h.ID, "error", err)
		msg := "could not re-attach after client restart: " + err.Error()
		// The task may still run (its watcher lost, an engine that did
		// not answer): kill it before the servers hear it is dead and
		// place it, and its GPUs, elsewhere.
		if kerr := tr.killUnattached(h); kerr != nil {
			if tr.ar.isDetached() {
				// The client stops and leaves tasks running: the handle
				// stays stored, and the next client tries again.
				return nil, 0, true
			}
			tr.logger.Error("killing a task that could not be re-attached; reporting it dead though it may still run",
				"task_id", h.ID, "error", kerr)
			msg += "; killing it failed: " + kerr.Error()
		}
		tr.ar.persistHandle(tr.task.Name, nil)
		tr.emit(&structs.TaskEvent{Type: TaskReattachFailed, Message: msg}, tr.becomeDead(true))
		return nil, 0, true
	}
	tr.emit(&structs.TaskEvent{Type: TaskReattached, Message: "Re-attached to task after client restart"}, func(s *structs.TaskState) {
		s.State = structs.TaskStateRunning
	})
	return func() (*drivers.ExitResult, bool) { return tr.waitAttempt(h.ID) }, nextAttempt(h.ID), false
}

// reattach hands a stored handle back to the task's driver.
func (tr *taskRunner) reattach(h *drivers.TaskHandle) error {
	r, ok := tr.driver.(drivers.Recoverer)
	if !ok {
		return fmt.Errorf("driver %q cannot re-attach to tasks", tr.task.Driver)
	}
	return r.RecoverTask(h)
}

// Killing a task that could not be re-attached: the wait before the
// second try, doubling up to unattachedKillMaxWait; the bound of each
// try; and how many tries are left once the task is asked to die (a
// stop, a client shutting down without leaving tasks running), which
// someone waits for, and their first wait. Variables for tests.
var (
	unattachedKillBackoff = 200 * time.Millisecond
	unattachedKillMaxWait = time.Minute
	unattachedKillTimeout = 30 * time.Second
	unattachedKillTries   = 5
	// unattachedKillDyingWait is the first wait once asked to die.
	unattachedKillDyingWait = 50 * time.Millisecond
)

// killUnattached kills, through the driver's drivers.TaskKiller, what
// is left of a task whose re-attach failed. A task that may still run
// holds its GPUs, so it is not reported dead (and its allocation placed
// elsewhere) while a kill could still succeed: it retries until the kill
// succeeds, the handle names nothing it can kill by
// (drivers.ErrInvalidConfig), the client detaches (the next one tries
// again), or, once the task is asked to die, unattachedKillTries more
// tries failed. A driver without the capability has nothing to kill by;
// nil then.
func (tr *taskRunner) killUnattached(h *drivers.TaskHandle) error {
	k, ok := tr.driver.(drivers.TaskKiller)
	if !ok {
		return nil
	}
	wait := unattachedKillBackoff
	left := -1 // tries left once asked to die; -1 until then
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), unattachedKillTimeout)
		err := k.KillTask(ctx, h)
		cancel()
		if err == nil || errors.Is(err, drivers.ErrInvalidConfig) {
			return err
		}
		if left < 0 && tr.killed() {
			// Asked to die: someone waits, so the retries are few and
			// quick from here.
			left, wait = unattachedKillTries, unattachedKillDyingWait
		}
		if left > 0 {
			if left--; left == 0 {
				return err
			}
		}
		tr.logger.Warn("killing a task that could not be re-attached; retrying", "task_id", h.ID, "try", try, "error", err)
		var killCh <-chan struct{}
		if left < 0 {
			killCh = tr.killCh // a kill cuts a long wait short
		}
		select {
		case <-tr.ar.clock.After(wait):
			wait = min(2*wait, unattachedKillMaxWait)
		case <-killCh:
		case <-tr.ar.detachCh:
			return err
		}
	}
}

// nextAttempt is the attempt after the one of a driver task ID
// ("<alloc>/<task>/<attempt>").
func nextAttempt(id string) int {
	n, err := strconv.Atoi(id[strings.LastIndexByte(id, '/')+1:])
	if err != nil {
		return 0
	}
	return n + 1
}

// runOnce starts the task and waits for it to exit or be killed.
// wasKilled reports that the task is dead by a kill and nothing follows.
func (tr *taskRunner) runOnce(attempt int) (res *drivers.ExitResult, wasKilled bool) {
	cfg := tr.taskConfig(attempt)
	// Artifacts and templates (task_prestart.go).
	if res, wasKilled, ok := tr.prestart(cfg); !ok {
		return res, wasKilled
	}
	// From the start until the handle is saved, Detach waits: a task it
	// leaves running must be in the store for the next client.
	tr.ar.startMu.RLock()
	if tr.ar.isDetached() {
		tr.ar.startMu.RUnlock()
		return nil, true
	}
	h, err := tr.start(cfg)
	if err != nil {
		tr.ar.startMu.RUnlock()
		tr.logger.Warn("task start", "error", err)
		tr.emit(&structs.TaskEvent{Type: structs.TaskDriverFail, Message: err.Error()}, nil)
		return &drivers.ExitResult{ExitCode: -1, Err: err}, false
	}
	tr.ar.persistHandle(tr.task.Name, h)
	// Saved before Detach too: the next client keeps the start time
	// (max_run_time counts from it).
	tr.emit(&structs.TaskEvent{Type: structs.TaskStarted, Message: "Task started by client"}, func(s *structs.TaskState) {
		s.State = structs.TaskStateRunning
		if s.StartedAt.IsZero() {
			s.StartedAt = tr.ar.clock.Now()
		}
	})
	tr.ar.startMu.RUnlock()
	defer tr.watchCheckpoint()() // checkpoint.go
	return tr.waitAttempt(cfg.ID)
}

// start checks the task's user against the client's policy, then starts
// the task through its driver.
func (tr *taskRunner) start(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if err := tr.ar.users.check(tr.task.Driver, cfg.User); err != nil {
		return nil, err
	}
	return tr.driver.Start(context.Background(), cfg)
}

// waitAttempt waits for the running driver task id to exit or be
// killed, then destroys it and forgets its handle. When the runner is
// detached first it returns as killed and leaves the task alone.
func (tr *taskRunner) waitAttempt(id string) (res *drivers.ExitResult, wasKilled bool) {
	detached := false
	defer func() {
		// Detached, even if the task just exited: the next client
		// re-attaches through the saved handle and reads the exit there.
		if detached || tr.ar.isDetached() {
			return
		}
		if err := tr.driver.Destroy(id); err != nil {
			tr.logger.Warn("task destroy", "error", err)
		}
		tr.ar.persistHandle(tr.task.Name, nil)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitCh, err := tr.driver.Wait(ctx, id)
	if err != nil {
		tr.emit(&structs.TaskEvent{Type: structs.TaskDriverFail, Message: err.Error()}, nil)
		return &drivers.ExitResult{ExitCode: -1, Err: err}, false
	}
	select {
	case res = <-waitCh:
		tr.emit(terminatedEvent(res), nil)
		return res, false
	case <-tr.ar.detachCh:
		detached = true
		return nil, true
	case <-tr.killCh:
	}
	tr.stop(id, waitCh)
	return nil, true
}

// stop kills the running task with its kill signal and timeout and
// records Killing, Terminated and Killed.
func (tr *taskRunner) stop(id string, waitCh <-chan *drivers.ExitResult) {
	switch tr.killType {
	case TaskSiblingFailed, TaskMaxRunTimeExceeded, structs.TaskLeaderDead, structs.TaskMainDead:
		tr.emit(&structs.TaskEvent{Type: tr.killType, Message: tr.killReason}, nil)
	case structs.TaskPreempted:
		tr.emit(&structs.TaskEvent{
			Type: structs.TaskPreempted,
			Message: fmt.Sprintf("Preempted (%s): sending %s, %s=1, %v to checkpoint before force kill",
				tr.killReason, killSignal(tr.task), structs.EnvPreempted, tr.task.KillTimeout),
			Details: map[string]string{
				"kill_signal": killSignal(tr.task), "kill_timeout": tr.task.KillTimeout.String(),
				structs.EnvPreempted: "1", "reason": tr.killReason,
			},
		}, nil)
	}
	res, exited := tr.waitShutdownDelay(waitCh) // shutdown_delay.go
	if !exited {
		tr.emit(&structs.TaskEvent{
			Type:    structs.TaskKilling,
			Message: fmt.Sprintf("Sent interrupt (%s), waiting %v before force kill: %s", killSignal(tr.task), tr.task.KillTimeout, tr.killReason),
			Details: map[string]string{"kill_timeout": tr.task.KillTimeout.String(), "kill_signal": killSignal(tr.task), "kill_reason": tr.killReason},
		}, nil)
		if err := tr.driver.Stop(id, tr.task.KillTimeout, tr.task.KillSignal); err != nil {
			tr.logger.Warn("task stop", "error", err)
		}
		res = <-waitCh
	}
	if res != nil {
		tr.emit(terminatedEvent(res), nil)
	}
	// A task past its max_run_time did not finish its work: it failed.
	tr.emit(&structs.TaskEvent{Type: structs.TaskKilled, Message: "Task successfully killed"}, tr.becomeDead(tr.killType == TaskMaxRunTimeExceeded))
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
	env := TaskEnvOn(alloc, tr.task, ar.allocDir, taskDir, ar.node)
	share := ar.gpuShareEnv(tr.task.Name)
	maps.Copy(env, share)                               // MPS limits (gpu_sharing.go)
	maps.Copy(env, ar.checkpoint.env(tr.task, attempt)) // checkpoint.go
	jobName := alloc.JobID
	if alloc.Job != nil {
		jobName = alloc.Job.Name
	}
	logs := logConfig(tr.task)
	cfg := &drivers.TaskConfig{
		ID:               fmt.Sprintf("%s/%s/%d", alloc.ID, tr.task.Name, attempt),
		AllocID:          alloc.ID,
		JobName:          jobName,
		TaskName:         tr.task.Name,
		Env:              env,
		Config:           Runtime{Env: env, Node: ar.node}.Config(tr.task.Config), // interpolate.go
		TaskDir:          taskDir,
		AllocDir:         SharedDir(ar.allocDir),
		User:             tr.task.User,
		StdoutPath:       LogBase(ar.allocDir, tr.task.Name, false),
		StderrPath:       LogBase(ar.allocDir, tr.task.Name, true),
		LogMaxFiles:      logs.MaxFiles,
		LogMaxFileSizeMB: logs.MaxFileSizeMB,
		Resources:        taskResources(alloc, tr.task.Name),
		DeviceIDs:        DeviceIDs(alloc, tr.task.Name),
		MPSPipeDir:       share[EnvMPSPipeDirectory],
		Ports:            allocPorts(alloc),
		Mounts:           ar.mounts[tr.task.Name],
	}
	if logs.Disabled {
		// logs { disabled = true }: the drivers drop the output.
		cfg.StdoutPath, cfg.StderrPath = "", ""
	}
	return cfg
}

// logConfig is the task's logs block with the defaults for what it
// leaves unset.
func logConfig(t *structs.Task) structs.LogConfig {
	lc := *structs.DefaultLogConfig()
	if t.LogConfig != nil {
		if t.LogConfig.MaxFiles > 0 {
			lc.MaxFiles = t.LogConfig.MaxFiles
		}
		if t.LogConfig.MaxFileSizeMB > 0 {
			lc.MaxFileSizeMB = t.LogConfig.MaxFileSizeMB
		}
		lc.Disabled = t.LogConfig.Disabled
	}
	return lc
}
