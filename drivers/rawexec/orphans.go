package rawexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
)

var _ drivers.OrphanKiller = (*Driver)(nil)

// pidFile is what an executor writes next to its status file while its
// task runs: enough to find and kill the task without the client's
// state, and to tell the executor from a later process with its PID.
type pidFile struct {
	TaskID        string
	PID           int    // the task, leader of its process group
	TaskStart     uint64 // procStart of the task (0 in files of older executors)
	ExecutorPID   int
	ExecutorStart uint64 // procStart of the executor
	// BootID is the kernel's boot ID when the file was written: after a
	// reboot the PIDs name other processes ("" in files of older
	// executors, and where the kernel has none).
	BootID string `json:",omitempty"`
}

const pidFilePrefix = ".drover-task-"

// pidPath is where the executor of task id notes its PIDs: beside its
// status file, in the task dir's parent (the alloc dir).
func pidPath(taskDir, id string) string {
	dir := os.TempDir()
	if taskDir != "" {
		dir = filepath.Dir(filepath.Clean(taskDir))
	}
	name := strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(id)
	return filepath.Join(dir, pidFilePrefix+name+".json")
}

// writePIDFile runs in the executor; a file it cannot write only costs
// the orphan sweep this task.
func writePIDFile(path, taskID string, pid int) {
	if path == "" {
		return
	}
	start, _ := hostexec.ProcStart(os.Getpid())
	taskStart, _ := hostexec.ProcStart(pid) // the child is not reaped yet: it is ours
	_ = hostexec.WriteStateFile(path, pidFile{TaskID: taskID, PID: pid, TaskStart: taskStart, ExecutorPID: os.Getpid(), ExecutorStart: start, BootID: hostexec.BootID()}, 0o644)
}

// KillOrphans implements drivers.OrphanKiller: it kills every raw_exec
// task whose executor noted it in a pid file under allocRoot/<alloc>/
// and whose ID is not in keep, with its process group and its executor,
// and removes the pid file. A pid file whose task and executor are both
// gone (their PIDs dead or reused) is only removed.
func (d *Driver) KillOrphans(ctx context.Context, allocRoot string, keep map[string]bool) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(allocRoot, "*", pidFilePrefix+"*.json"))
	if err != nil {
		return nil, fmt.Errorf("raw_exec: find orphans: %w", err)
	}
	var killed []string
	var errs []error
	for _, f := range files {
		if ctx.Err() != nil {
			return killed, ctx.Err()
		}
		pf, err := readPIDFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if keep[pf.TaskID] {
			continue
		}
		if !killable(pf) {
			d.logger.Warn("raw_exec: pid file names no task of this boot, or a process the agent must not kill; removing it", "file", f, "pid", pf.PID, "executor_pid", pf.ExecutorPID)
		} else if ok, err := killTask(ctx, pf); err != nil {
			errs = append(errs, err)
			continue // kept for the next sweep
		} else if ok {
			killed = append(killed, pf.TaskID)
			d.logger.Warn("killed orphaned task", "task_id", pf.TaskID, "pid", pf.PID, "executor_pid", pf.ExecutorPID)
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return killed, errors.Join(errs...)
}

func readPIDFile(path string) (pidFile, error) {
	var pf pidFile
	buf, err := hostexec.ReadStateFile(path)
	if err != nil {
		return pf, err
	}
	if err := json.Unmarshal(buf, &pf); err != nil || pf.PID <= 0 || pf.ExecutorPID <= 0 {
		return pf, fmt.Errorf("raw_exec: pid file %s: unreadable (%v)", path, err)
	}
	return pf, nil
}

// killTask kills the task pf names, with its process group, and its
// executor, if they are still the processes pf names; the caller has
// checked killable(pf). It reports whether it killed anything.
//
// While the executor runs it has not reaped the task, so the group ID
// still names the task's group and nobody else's. With the executor
// gone (killed, out of memory) the task may live on, re-parented: its
// group is killed only if its leader is still the process that started
// at pf.TaskStart.
func killTask(ctx context.Context, pf pidFile) (bool, error) {
	pid, start := pf.ExecutorPID, pf.ExecutorStart
	if s, ok := hostexec.ProcStart(pid); !ok || s != start {
		if s, ok := hostexec.ProcStart(pf.PID); !ok || pf.TaskStart == 0 || s != pf.TaskStart {
			return false, nil
		}
		pid, start = pf.PID, pf.TaskStart
	}
	_ = syscall.Kill(-pf.PID, syscall.SIGKILL)
	if pid == pf.ExecutorPID {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(ctx, pid, start)
	if s, ok := hostexec.ProcStart(pid); ok && s == start {
		return true, fmt.Errorf("raw_exec: task %s: process %d still runs after SIGKILL", pf.TaskID, pid)
	}
	return true, nil
}

var _ drivers.TaskKiller = (*Driver)(nil)

// KillTask implements drivers.TaskKiller: it kills the task of a handle
// that could not be re-attached (its executor lost, say) through the pid
// file its executor wrote, or, without one, the executor the handle
// names with the task's group.
func (d *Driver) KillTask(ctx context.Context, h *drivers.TaskHandle) (err error) {
	if h == nil || h.ID == "" {
		return fmt.Errorf("%w: missing task handle", drivers.ErrInvalidConfig)
	}
	var pf pidFile
	if h.Config != nil && h.Config.TaskDir != "" {
		path := pidPath(h.Config.TaskDir, h.ID)
		if got, err := readPIDFile(path); err == nil && got.TaskID == h.ID {
			pf = got
			defer func() {
				if err == nil {
					_ = os.Remove(path)
				}
			}()
		}
	}
	if pf.TaskID == "" {
		pid, err1 := strconv.Atoi(h.State[statePID])
		shimPID, err2 := strconv.Atoi(h.State[stateShimPID])
		shimStart, err3 := strconv.ParseUint(h.State[stateShimStart], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("kill %s: %w: bad handle state %v", h.ID, drivers.ErrInvalidConfig, h.State)
		}
		pf = pidFile{TaskID: h.ID, PID: pid, ExecutorPID: shimPID, ExecutorStart: shimStart}
	}
	if !killable(pf) {
		return nil // names nothing of this boot the agent may kill: gone
	}
	ok, err := killTask(ctx, pf)
	if ok && err == nil {
		d.logger.Warn("killed task that could not be re-attached", "task_id", h.ID, "pid", pf.PID, "executor_pid", pf.ExecutorPID)
	}
	return err
}

// killable reports whether a pid file may name a live task of this boot
// that the agent may kill: never PID 0 or 1, the agent itself or its
// process group, a file of another boot, or a task PID that no longer
// leads its own process group (then it is not the task's any more).
func killable(pf pidFile) bool {
	self, group := os.Getpid(), syscall.Getpgrp()
	switch {
	case pf.PID <= 1, pf.ExecutorPID <= 1, pf.PID == self, pf.ExecutorPID == self, pf.PID == group:
		return false
	case pf.BootID != "" && pf.BootID != hostexec.BootID():
		return false
	}
	if pg, err := syscall.Getpgid(pf.PID); err == nil && pg != pf.PID {
		return false
	}
	return true
}

// waitGone waits (briefly) for a killed process to stop being the
// process that started at start: it is not this agent's child, so its
// parent (init) reaps it.
func waitGone(ctx context.Context, pid int, start uint64) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if s, ok := hostexec.ProcStart(pid); !ok || s != start {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
