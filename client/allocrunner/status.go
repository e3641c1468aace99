package allocrunner

import "github.com/droverhq/drover/structs"

// Client descriptions of an allocation, by status.
const (
	DescPending  = "No tasks have started"
	DescStarting = "Tasks are starting"
	DescRunning  = "Tasks are running"
	DescComplete = "All tasks have completed"
	DescFailed   = "Failed tasks"
)

// ClientStatus derives an allocation's client status from its tasks:
// failed if any task failed; complete once every task is dead; running
// once every task has started at least once (a task waiting to restart
// still counts); pending before that.
func ClientStatus(states map[string]*structs.TaskState) (status, description string) {
	return clientStatus(states, nil)
}

// clientStatus is ClientStatus where the tasks in notYet (poststop tasks
// that have not started) need not have started for the allocation to
// run.
func clientStatus(states map[string]*structs.TaskState, notYet map[string]bool) (status, description string) {
	if len(states) == 0 {
		return structs.AllocClientStatusPending, DescPending
	}
	allDead, allStarted, anyStarted := true, true, false
	for name, s := range states {
		if s.Failed {
			return structs.AllocClientStatusFailed, DescFailed
		}
		dead := s.State == structs.TaskStateDead
		started := !s.StartedAt.IsZero() || dead || notYet[name]
		allDead = allDead && dead
		allStarted = allStarted && started
		anyStarted = anyStarted || started
	}
	switch {
	case allDead:
		return structs.AllocClientStatusComplete, DescComplete
	case allStarted:
		return structs.AllocClientStatusRunning, DescRunning
	case anyStarted:
		return structs.AllocClientStatusPending, DescStarting
	}
	return structs.AllocClientStatusPending, DescPending
}
