package allocrunner

import (
	"errors"
	"fmt"
	"sync"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// TaskRestartSignaled is the event recorded when a restart of a running
// task is requested (drover alloc restart).
const TaskRestartSignaled = "Restart Signaled"

// ReasonUserRestart is the reason RestartTask records when none is given.
const ReasonUserRestart = "User requested restart"

// Errors of RestartTask, tested with errors.Is.
var (
	ErrUnknownTask    = structs.NewCodedError(structs.CodeNotFound, "allocrunner: unknown task")
	ErrTaskNotRunning = structs.NewCodedError(structs.CodeConflict, "allocrunner: task not running")
)

// restartRequest is the restart state of one task while it runs: the
// driver task to stop and whether a restart was asked for. A requested
// restart kills the task and starts it again at once, without counting
// against the restart policy.
type restartRequest struct {
	mu        sync.Mutex
	driverID  string // the driver task of this attempt
	running   bool   // false once the attempt is over
	requested bool
}

// restartRequests maps each *taskRunner inside runOnceOrRestart to its
// *restartRequest. It lives here, not on taskRunner, to keep restarts out
// of the task runner's core loop; entries exist only while a task runs.
var restartRequests sync.Map

// runOnceOrRestart runs one attempt of the task like runOnce, and runs
// it again each time a restart was requested while it ran. Only an exit
// nobody asked for (or a kill) is returned to the restart policy.
func (tr *taskRunner) runOnceOrRestart(attempt int) (*drivers.ExitResult, bool) {
	for {
		req := &restartRequest{driverID: tr.taskConfig(attempt).ID, running: true}
		restartRequests.Store(tr, req)
		res, wasKilled := tr.runOnce(attempt)
		restartRequests.Delete(tr)
		req.mu.Lock()
		req.running = false
		requested := req.requested
		req.mu.Unlock()
		if wasKilled || !requested || tr.killed() {
			return res, wasKilled
		}
		tr.emit(&structs.TaskEvent{
			Type:    structs.TaskRestarting,
			Message: "Restart requested; restarting now",
			Details: map[string]string{"restart_reason": ReasonUserRestart, "restart_delay": "0s"},
		}, func(s *structs.TaskState) {
			s.State = structs.TaskStatePending
			s.Restarts++
			s.LastRestart = tr.ar.clock.Now()
		})
	}
}

// requestRestart kills the task's running attempt so that
// runOnceOrRestart starts it again.
func (tr *taskRunner) requestRestart(reason string) error {
	v, ok := restartRequests.Load(tr)
	if !ok || tr.state() != structs.TaskStateRunning {
		return fmt.Errorf("restart task %q: %w", tr.task.Name, ErrTaskNotRunning)
	}
	req := v.(*restartRequest)
	req.mu.Lock()
	if !req.running {
		req.mu.Unlock()
		return fmt.Errorf("restart task %q: %w", tr.task.Name, ErrTaskNotRunning)
	}
	first := !req.requested
	req.requested = true
	req.mu.Unlock()
	if !first {
		return nil // a restart is already under way
	}
	tr.emit(&structs.TaskEvent{
		Type:    TaskRestartSignaled,
		Message: reason,
		Details: map[string]string{"restart_reason": reason},
	}, nil)
	if err := tr.driver.Stop(req.driverID, tr.task.KillTimeout, tr.task.KillSignal); err != nil {
		req.mu.Lock()
		req.requested = false
		req.mu.Unlock()
		return fmt.Errorf("restart task %q: stop: %w", tr.task.Name, err)
	}
	return nil
}

// state returns the task's current state.
func (tr *taskRunner) state() string {
	tr.ar.mu.Lock()
	defer tr.ar.mu.Unlock()
	if s := tr.ar.states[tr.task.Name]; s != nil {
		return s.State
	}
	return ""
}

// RestartTask restarts a running task of the allocation in place (all
// running tasks when task is ""), recording a Restart Signaled event with
// reason (ReasonUserRestart when empty). The restart does not count
// against the group's restart policy. It returns ErrUnknownTask or
// ErrTaskNotRunning (wrapped) when there is nothing to restart.
func (ar *AllocRunner) RestartTask(task, reason string) error {
	if reason == "" {
		reason = ReasonUserRestart
	}
	if task != "" {
		for _, tr := range ar.tasks {
			if tr.task.Name == task {
				return tr.requestRestart(reason)
			}
		}
		return fmt.Errorf("restart task %q: %w", task, ErrUnknownTask)
	}
	restarted := 0
	for _, tr := range ar.tasks {
		if err := tr.requestRestart(reason); err == nil {
			restarted++
		} else if !errors.Is(err, ErrTaskNotRunning) {
			return err
		}
	}
	if restarted == 0 {
		return fmt.Errorf("restart allocation %s: %w", ar.id, ErrTaskNotRunning)
	}
	return nil
}
