package drivers

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Helpers shared by the drivers that run host processes (raw_exec, exec).

// SignalFunc delivers a signal to a task; sent is false when the task had
// already exited.
type SignalFunc func(sig syscall.Signal) (sent bool, err error)

// StopProcess is the stop every process-based driver does: send sig,
// wait up to timeout for done to close, then SIGKILL and wait for done.
// A task that already exited is waited for and is not an error.
func StopProcess(logger hclog.Logger, taskID string, send SignalFunc, done <-chan struct{}, sig syscall.Signal, timeout time.Duration) error {
	sent, err := send(sig)
	if err != nil {
		return fmt.Errorf("stop %s: %w", taskID, err)
	}
	if !sent {
		<-done
		return nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
	}
	logger.Debug("task ignored kill signal; sending SIGKILL", "task_id", taskID, "signal", sig, "timeout", timeout)
	if _, err := send(syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop %s: %w", taskID, err)
	}
	<-done
	return nil
}

// SignalProcess delivers sig with send, as drivers.Signaler wants: a task
// that has exited is an error.
func SignalProcess(taskID string, send SignalFunc, sig syscall.Signal) error {
	sent, err := send(sig)
	if err != nil {
		return fmt.Errorf("signal %s: %w", taskID, err)
	}
	if !sent {
		return fmt.Errorf("signal %s: task has exited", taskID)
	}
	return nil
}

// WaitProcess is Wait for a process-based driver: the returned channel
// gets result() once done is closed, or closes empty when ctx ends first.
func WaitProcess(ctx context.Context, done <-chan struct{}, result func() ExitResult) <-chan *ExitResult {
	ch := make(chan *ExitResult, 1)
	go func() {
		defer close(ch)
		select {
		case <-done:
			r := result()
			ch <- &r
		case <-ctx.Done():
		}
	}()
	return ch
}
