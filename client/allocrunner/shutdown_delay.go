package allocrunner

import (
	"fmt"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// TaskWaitingShutdownDelay is the event of a task being stopped that
// waits out its shutdown_delay before it is signalled (Nomad's).
const TaskWaitingShutdownDelay = "Waiting for shutdown delay"

// waitShutdownDelay waits, before a stopped task is signalled, for the
// group's shutdown_delay plus the task's (structs.TaskGroup.KillDelay),
// so that clients routed to it by a service registry move away first.
// Service deregistration happens before this wait. It returns early
// when the task exits meanwhile (exited, with its result, nil when the
// driver's wait channel closed) or the client detaches. A client
// shutting down (KillAll) does not wait.
func (tr *taskRunner) waitShutdownDelay(waitCh <-chan *drivers.ExitResult) (res *drivers.ExitResult, exited bool) {
	if tr.killType == killClientShutdown {
		return nil, false
	}
	tr.ar.mu.Lock()
	alloc := tr.ar.alloc
	tr.ar.mu.Unlock()
	var tg *structs.TaskGroup
	if alloc.Job != nil {
		tg = alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	}
	delay := tg.KillDelay(tr.task)
	if delay <= 0 {
		return nil, false
	}
	tr.emit(&structs.TaskEvent{
		Type:    TaskWaitingShutdownDelay,
		Message: fmt.Sprintf("Waiting for shutdown_delay of %s before killing the task.", delay),
		Details: map[string]string{"shutdown_delay": delay.String()},
	}, nil)
	select {
	case <-tr.ar.clock.After(delay):
		return nil, false
	case r := <-waitCh:
		return r, true
	case <-tr.ar.detachCh:
		return nil, false
	}
}
