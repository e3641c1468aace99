package structs

import (
	"errors"
	"fmt"
)

// Task lifecycle hooks (Nomad's lifecycle block).
const (
	TaskLifecycleHookPrestart  = "prestart"
	TaskLifecycleHookPoststart = "poststart"
	TaskLifecycleHookPoststop  = "poststop"
)

// TaskLeaderDead is the event of the tasks a group's leader task stopped
// by ending (Nomad's).
const TaskLeaderDead = "Leader Task Dead"

// TaskMainDead is the event of the sidecars stopped because the group's
// main tasks ended (Nomad's "Main Tasks Dead").
const TaskMainDead = "Main Tasks Dead"

// TaskLifecycleConfig places a task before, beside or after the group's
// main tasks (Nomad's TaskLifecycle):
//
//	prestart            runs to a successful exit before the main tasks start
//	prestart + sidecar  starts first and runs beside the main tasks
//	poststart           starts once every main task runs (sidecar: and
//	                    runs beside them; else to its exit)
//	poststop            runs once the main tasks and sidecars are dead
//
// Sidecars are stopped when the main tasks end.
type TaskLifecycleConfig struct {
	Hook    string
	Sidecar bool
}

// Copy returns a copy of the lifecycle.
func (l *TaskLifecycleConfig) Copy() *TaskLifecycleConfig {
	if l == nil {
		return nil
	}
	c := *l
	return &c
}

// Validate checks the hook.
func (l *TaskLifecycleConfig) Validate() error {
	if l == nil {
		return nil
	}
	switch l.Hook {
	case TaskLifecycleHookPrestart, TaskLifecycleHookPoststart:
	case TaskLifecycleHookPoststop:
		if l.Sidecar {
			return errors.New("lifecycle: a poststop task cannot be a sidecar (nothing runs beside it)")
		}
	case "":
		return errors.New("lifecycle: missing hook (prestart, poststart or poststop)")
	default:
		return fmt.Errorf("lifecycle: hook %q is not one of prestart, poststart, poststop", l.Hook)
	}
	return nil
}

// IsMain reports whether a task is one of its group's main tasks: one
// without a lifecycle hook.
func (t *Task) IsMain() bool { return t.Lifecycle == nil || t.Lifecycle.Hook == "" }

// IsSidecar reports whether a task is a sidecar.
func (t *Task) IsSidecar() bool { return t.Lifecycle != nil && t.Lifecycle.Sidecar }

// IsHook reports whether a task has the lifecycle hook.
func (t *Task) IsHook(hook string) bool { return t.Lifecycle != nil && t.Lifecycle.Hook == hook }

// validateLifecycle checks what spans a group's tasks: at least one main
// task, at most one leader.
func (tg *TaskGroup) validateLifecycle() error {
	var errs []error
	mains, leaders := 0, []string{}
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		if t.IsMain() {
			mains++
		}
		if t.Leader {
			leaders = append(leaders, t.Name)
		}
	}
	if len(tg.Tasks) > 0 && mains == 0 {
		errs = append(errs, errors.New("needs at least one main task (a task without a lifecycle block)"))
	}
	if len(leaders) > 1 {
		errs = append(errs, fmt.Errorf("at most one task may be the leader: %q", leaders))
	}
	return errors.Join(errs...)
}
