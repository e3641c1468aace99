package rawexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/drivers"
)

var _ drivers.OrphanKiller = (*Driver)(nil)

// pidFile is what an executor writes next to its status file while its
// task runs: enough to find and kill the task without the client's
// state, and to tell the executor from a later process with its PID.
type pidFile struct {
	TaskID        string
	PID           int // the task, leader of its process group
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
	start, _ := procStart(os.Getpid())
	buf, err := json.Marshal(pidFile{TaskID: taskID, PID: pid, ExecutorPID: os.Getpid(), ExecutorStart: start, BootID: bootID()})
	if err != nil {
		return
	}
	tmp := path + ".tmp"
	if os.WriteFile(tmp, buf, 0o644) == nil {
		_ = os.Rename(tmp, path)
	}
}

// KillOrphans implements drivers.OrphanKiller: it kills every raw_exec
// task whose executor noted it in a pid file under allocRoot/<alloc>/
// and whose ID is not in keep, with its process group and its executor,
// and removes the pid file. A pid file whose executor is gone (its PID
// dead or reused) is only removed.
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
		buf, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var pf pidFile
		if err := json.Unmarshal(buf, &pf); err != nil || pf.PID <= 0 || pf.ExecutorPID <= 0 {
			errs = append(errs, fmt.Errorf("raw_exec: pid file %s: unreadable (%v)", f, err))
			continue
		}
		if keep[pf.TaskID] {
			continue
		}
		if !killable(pf) {
			d.logger.Warn("raw_exec: pid file names no task of this boot, or a process the agent must not kill; removing it", "file", f, "pid", pf.PID, "executor_pid", pf.ExecutorPID)
		} else if start, ok := procStart(pf.ExecutorPID); ok && start == pf.ExecutorStart {
			// The executor has not reaped the task, so the group ID
			// still names the task's group and nobody else's.
			_ = syscall.Kill(-pf.PID, syscall.SIGKILL)
			_ = syscall.Kill(pf.ExecutorPID, syscall.SIGKILL)
			waitGone(ctx, pf.ExecutorPID, start)
			killed = append(killed, pf.TaskID)
			d.logger.Warn("killed orphaned task", "task_id", pf.TaskID, "pid", pf.PID, "executor_pid", pf.ExecutorPID)
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return killed, errors.Join(errs...)
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
	case pf.BootID != "" && pf.BootID != bootID():
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
		if s, ok := procStart(pid); !ok || s != start {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
