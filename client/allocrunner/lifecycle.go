package allocrunner

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// Task ordering by lifecycle hook (Nomad's lifecycle block):
//
//	prestart tasks ----------> non-sidecars exit 0, sidecars run
//	                              |
//	main tasks start <------------+
//	   every main task running --> poststart tasks start
//	every non-sidecar task dead -> sidecars killed ("Main Tasks Dead")
//	every other task dead ------> poststop tasks start, run to exit
//
// A failed task kills the others (not poststop ones, which run after);
// so does the end of a leader task ("Leader Task Dead"). A stop (Kill)
// kills every task but the poststop ones, which then run. max_run_time
// and preemption kill every task. A task killed before it started is
// launched anyway, so that it records its end at once.

// runTasks launches the allocation's task runners in lifecycle order
// and returns when every launched one has returned and none is left to
// launch (or the runner is detached).
func (ar *AllocRunner) runTasks() {
	done := make(chan *taskRunner, len(ar.tasks))
	launched := make(map[*taskRunner]bool, len(ar.tasks))
	running := 0
	launch := func(tr *taskRunner) {
		if launched[tr] {
			return
		}
		launched[tr] = true
		running++
		go func() {
			tr.run()
			done <- tr
		}()
	}
	deadline, maxRun := ar.runDeadline()
	detachCh := ar.detachCh
	for {
		if !ar.isDetached() {
			ar.launchReady(launched, launch)
		}
		if running == 0 && (len(launched) == len(ar.tasks) || ar.isDetached()) {
			return
		}
		select {
		case tr := <-done:
			running--
			ar.taskEnded(tr)
		case <-ar.changed:
		case <-deadline:
			deadline = nil
			for _, t := range ar.tasks {
				t.kill(TaskMaxRunTimeExceeded, fmt.Sprintf("Job max_run_time %v exceeded", maxRun))
			}
		case <-detachCh:
			detachCh = nil // launched tasks return on their own
		}
	}
}

// taskEnded kills the other tasks when the task that ended failed or
// was the group's leader.
func (ar *AllocRunner) taskEnded(tr *taskRunner) {
	switch {
	case ar.taskFailed(tr.task.Name):
		ar.killOthers(tr, TaskSiblingFailed, fmt.Sprintf("Task %q failed", tr.task.Name))
	case tr.task.Leader:
		ar.killOthers(tr, structs.TaskLeaderDead, fmt.Sprintf("Leader task %q is dead", tr.task.Name))
	}
}

// killOthers kills every task but tr and the poststop tasks.
func (ar *AllocRunner) killOthers(tr *taskRunner, eventType, reason string) {
	for _, sib := range ar.tasks {
		if sib != tr && !sib.task.IsHook(structs.TaskLifecycleHookPoststop) {
			sib.kill(eventType, reason)
		}
	}
}

// taskView is what launchReady reads of a task's state.
type taskView struct {
	dead, failed, started, running bool
}

func (ar *AllocRunner) taskViews() map[*taskRunner]taskView {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	out := make(map[*taskRunner]taskView, len(ar.tasks))
	for _, tr := range ar.tasks {
		s := ar.states[tr.task.Name]
		if s == nil {
			continue
		}
		dead := s.State == structs.TaskStateDead
		out[tr] = taskView{
			dead:    dead,
			failed:  s.Failed,
			started: dead || !s.StartedAt.IsZero(),
			running: s.State == structs.TaskStateRunning,
		}
	}
	return out
}

// launchReady launches each task whose turn has come (see the top of
// this file) and kills the sidecars once the tasks they serve are dead.
func (ar *AllocRunner) launchReady(launched map[*taskRunner]bool, launch func(*taskRunner)) {
	views := ar.taskViews()
	prestartDone, mainStarted, liveNonSidecar, liveNonPoststop := true, true, false, false
	for _, tr := range ar.tasks {
		v, t := views[tr], tr.task
		if tr.killed() {
			launch(tr) // records its end at once if it never started
		}
		switch {
		case t.IsHook(structs.TaskLifecycleHookPrestart):
			launch(tr)
			if t.IsSidecar() {
				prestartDone = prestartDone && (v.running || v.dead)
			} else {
				prestartDone = prestartDone && v.dead && !v.failed
			}
		case t.IsMain():
			mainStarted = mainStarted && v.started
		}
		if !v.dead && !t.IsHook(structs.TaskLifecycleHookPoststop) {
			liveNonPoststop = true
			if !t.IsSidecar() {
				liveNonSidecar = true
			}
		}
	}
	for _, tr := range ar.tasks {
		t := tr.task
		switch {
		case t.IsMain() && prestartDone:
			launch(tr)
		case t.IsHook(structs.TaskLifecycleHookPoststart) && prestartDone && mainStarted:
			launch(tr)
		case t.IsHook(structs.TaskLifecycleHookPoststop) && !liveNonPoststop:
			launch(tr)
		}
		if t.IsSidecar() && !liveNonSidecar {
			tr.kill(structs.TaskMainDead, "Main tasks have finished")
		}
	}
}

// signalChange wakes runTasks after a task's state changed. Called with
// ar.mu held; it never blocks.
func (ar *AllocRunner) signalChange() {
	select {
	case ar.changed <- struct{}{}:
	default:
	}
}

// lifecycleRestartTracker is a task's restart tracker: a non-sidecar
// lifecycle task (prestart, poststart, poststop) that exits 0 is done,
// as a batch task is, whatever the job's type.
func lifecycleRestartTracker(policy *structs.RestartPolicy, jobType string, t *structs.Task) *restartTracker {
	rt := newRestartTracker(policy, jobType)
	if !t.IsMain() && !t.IsSidecar() {
		rt.batch = true
	}
	return rt
}

// poststopPending reports the poststop tasks that have not started:
// they do not keep the allocation from running (status.go).
func poststopPending(tasks []*taskRunner, states map[string]*structs.TaskState) map[string]bool {
	var out map[string]bool
	for _, tr := range tasks {
		s := states[tr.task.Name]
		if tr.task.IsHook(structs.TaskLifecycleHookPoststop) && s != nil && s.State == structs.TaskStatePending && s.StartedAt.IsZero() {
			if out == nil {
				out = map[string]bool{}
			}
			out[tr.task.Name] = true
		}
	}
	return out
}

// killClientShutdown is the kill type of KillAll: no shutdown_delay.
const killClientShutdown = "client shutdown"

// KillAll stops every task, poststop ones included, which then do not
// run: for a client shutting down, which waits for its tasks to die (at
// most their kill timeouts: a job's shutdown_delay, as long as it likes,
// does not hold the agent). Kill is the stop that runs poststop tasks.
func (ar *AllocRunner) KillAll(reason string) {
	for _, tr := range ar.tasks {
		tr.kill(killClientShutdown, reason)
	}
}
