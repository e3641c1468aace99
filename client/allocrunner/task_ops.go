package allocrunner

import (
	"context"
	"errors"
	"fmt"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// runningTasks returns the task runners named task ("" is every task)
// with the driver task of their running attempt; ErrUnknownTask when no
// task has that name.
func (ar *AllocRunner) runningTasks(task string) (map[*taskRunner]string, error) {
	out := map[*taskRunner]string{}
	found := false
	for _, tr := range ar.tasks {
		if task != "" && tr.task.Name != task {
			continue
		}
		found = true
		v, ok := restartRequests.Load(tr)
		if !ok || tr.state() != structs.TaskStateRunning {
			continue
		}
		req := v.(*restartRequest)
		req.mu.Lock()
		if req.running {
			out[tr] = req.driverID
		}
		req.mu.Unlock()
	}
	if !found {
		return nil, fmt.Errorf("task %q: %w", task, ErrUnknownTask)
	}
	return out, nil
}

// SignalTask sends signal (a name such as "SIGHUP") to a running task
// of the allocation, or to every running task when task is "". It
// returns ErrUnknownTask or ErrTaskNotRunning (wrapped) when there is
// nothing to signal.
func (ar *AllocRunner) SignalTask(task, signal string) error {
	if _, err := drivers.ParseSignal(signal); err != nil {
		return fmt.Errorf("signal %q: %w: %v", signal, structs.ErrInvalid, err)
	}
	running, err := ar.runningTasks(task)
	if err != nil {
		return fmt.Errorf("signal allocation %s: %w", ar.id, err)
	}
	if len(running) == 0 {
		return fmt.Errorf("signal allocation %s: %w", ar.id, ErrTaskNotRunning)
	}
	for tr, id := range running {
		sig, ok := tr.driver.(drivers.Signaler)
		if !ok {
			return fmt.Errorf("task %q: driver %s cannot signal a task: %w", tr.task.Name, tr.driver.Name(), structs.ErrInvalid)
		}
		if err := sig.Signal(id, signal); err != nil {
			return fmt.Errorf("signal task %q: %w", tr.task.Name, err)
		}
		tr.emit(&structs.TaskEvent{Type: TaskSignaling, Message: "Task being sent signal " + signal}, nil)
	}
	return nil
}

// TaskSignaling is the event recorded when a signal is sent to a task.
const TaskSignaling = "Signaling"

// ExecTask runs a command in a running task of the allocation, in the
// task's isolation (drivers.Execer), and returns its exit code. It
// returns ErrUnknownTask or ErrTaskNotRunning (wrapped) when there is no
// such task running, and an error wrapping structs.ErrInvalid when the
// task's driver cannot exec.
func (ar *AllocRunner) ExecTask(ctx context.Context, task string, opts *drivers.ExecOptions) (int, error) {
	if task == "" {
		return 0, fmt.Errorf("exec: task is required: %w", structs.ErrInvalid)
	}
	running, err := ar.runningTasks(task)
	if err != nil {
		return 0, fmt.Errorf("exec in allocation %s: %w", ar.id, err)
	}
	for tr, id := range running {
		ex, ok := tr.driver.(drivers.Execer)
		if !ok {
			return 0, fmt.Errorf("task %q: driver %s cannot exec: %w", task, tr.driver.Name(), structs.ErrInvalid)
		}
		res, err := ex.ExecTask(ctx, id, opts)
		switch {
		case errors.Is(err, drivers.ErrTaskNotRunning), errors.Is(err, drivers.ErrTaskNotFound):
			return 0, fmt.Errorf("exec in task %q: %w (%v)", task, ErrTaskNotRunning, err)
		case errors.Is(err, drivers.ErrInvalidConfig):
			return 0, fmt.Errorf("exec in task %q: %w: %v", task, structs.ErrInvalid, err)
		case err != nil:
			return 0, fmt.Errorf("exec in task %q: %w", task, err)
		}
		return res.ExitCode, nil
	}
	return 0, fmt.Errorf("exec in allocation %s: %w", ar.id, ErrTaskNotRunning)
}
