package exec

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

	"golang.org/x/sys/unix"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
	"github.com/droverhq/drover/drivers/taskuser"
)

// Surviving the agent. A task's init is not tied to the agent: it runs
// in a process group of its own (isolated: PID 1 of its own PID
// namespace) and nothing kills it when the agent dies, so the task
// keeps running. To be found again it leaves two files beside its task
// dir, in the alloc dir (the agent's; the task's user cannot write
// there):
//
//	.drover-exec-task-<id>.json   written by the driver before the init
//	                              starts: the task's cgroup (and, once
//	                              known, the init's PID and start time);
//	                              what KillOrphans reads without client
//	                              state
//	.drover-exec-exit-<id>.json   written by the init, through a dir fd
//	                              it got before pivot_root, when the
//	                              command exited: its exit status
//
// A restarted agent re-attaches with RecoverTask from the handle's
// State: it polls the init (PID + start time, so a reused PID is never
// taken for it) until the status file appears or the init is gone. The
// task's cgroup is the ground truth for what still runs: killing a
// recovered or orphaned task kills every process listed in it.

// Handle state keys.
const (
	statePID        = "pid"
	stateInitStart  = "init_start"
	stateStatusFile = "status_file"
	statePIDFile    = "pid_file"
	stateCgroups    = "cgroup_dirs" // every controller dir, ":"-joined
	stateIsolation  = "isolation"
	stateBootID     = "boot_id" // the kernel's, at start: PIDs of another boot name nothing
)

const (
	// initStateDirFD is the init's fd of the dir its status file goes in.
	initStateDirFD = 6
	// statusEnv carries the status file's name (in that dir) to the init.
	statusEnv = "DROVER_EXEC_STATUS"

	pidFilePrefix    = ".drover-exec-task-"
	statusFilePrefix = ".drover-exec-exit-"
)

// recoverPollInterval is how often a recovered task's init is checked.
const recoverPollInterval = 100 * time.Millisecond

// pidFile is the driver's note of one task, for KillOrphans.
type pidFile struct {
	TaskID  string
	Cgroups []string `json:",omitempty"` // nil without isolation
	// InitPID and InitStart name the init once it runs (0 before).
	InitPID   int    `json:",omitempty"`
	InitStart uint64 `json:",omitempty"`
	BootID    string `json:",omitempty"`
	// ExecSocket is the init's listening exec socket ("" for none).
	ExecSocket string `json:",omitempty"`
}

// stateFiles returns the status and pid file paths of a task: in its
// task dir's parent.
func stateFiles(taskDir, id string) (statusFile, pidPath string) {
	dir := os.TempDir()
	if taskDir != "" {
		dir = filepath.Dir(filepath.Clean(taskDir))
	}
	name := strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(id) + ".json"
	return filepath.Join(dir, statusFilePrefix+name), filepath.Join(dir, pidFilePrefix+name)
}

// writePIDFile writes pf at path atomically.
func writePIDFile(path string, pf pidFile) error {
	pf.BootID = hostexec.BootID()
	if err := hostexec.WriteStateFile(path, pf, 0o600); err != nil {
		return fmt.Errorf("task pid file: %w", err)
	}
	return nil
}

// writeStatusAt runs in the init: it writes the command's exit status
// into the dir open at dirFD, by rename, so a reader sees all of it or
// nothing. Without a dir or a name it does nothing.
func writeStatusAt(dirFD int, name string, ws syscall.WaitStatus) {
	if name == "" || strings.Contains(name, "/") {
		return
	}
	st := hostexec.ExitStatus{ExitCode: ws.ExitStatus()}
	if ws.Signaled() {
		st.Signal = int(ws.Signal())
		st.ExitCode = 128 + st.Signal
	}
	buf, _ := json.Marshal(st)
	tmp := name + ".tmp"
	fd, err := unix.Openat(dirFD, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return
	}
	_, werr := unix.Write(fd, buf)
	unix.Close(fd)
	if werr == nil {
		_ = unix.Renameat(dirFD, tmp, dirFD, name)
	}
}

// handleState is what RecoverTask and KillTask read from a handle.
type handleState struct {
	pid        int
	initStart  uint64
	statusFile string
	pidFile    string
	cgroup     *taskCgroup // nil without isolation
	isolated   bool
	execSocket string
	bootID     string
}

// parseHandle reads a handle's State; cgroup dirs outside this driver's
// cgroup parent are refused, so a bad handle never makes the driver
// kill or remove anything else.
func (d *Driver) parseHandle(h *drivers.TaskHandle) (*handleState, error) {
	if h == nil || h.ID == "" {
		return nil, fmt.Errorf("%w: missing task handle", drivers.ErrInvalidConfig)
	}
	pid, err1 := strconv.Atoi(h.State[statePID])
	start, err2 := strconv.ParseUint(h.State[stateInitStart], 10, 64)
	hs := &handleState{pid: pid, initStart: start, statusFile: h.State[stateStatusFile],
		pidFile: h.State[statePIDFile], isolated: h.State[stateIsolation] == "on", bootID: h.State[stateBootID]}
	if p := h.State[stateExecSocket]; isExecSocket(p) {
		hs.execSocket = p
	}
	if err := errors.Join(err1, err2); err != nil || pid <= 1 || hs.statusFile == "" {
		return nil, fmt.Errorf("recover %s: %w: bad handle state %v", h.ID, drivers.ErrInvalidConfig, h.State)
	}
	if v := h.State[stateCgroups]; v != "" {
		g, err := d.ownCgroup(strings.Split(v, ":"))
		if err != nil {
			return nil, fmt.Errorf("recover %s: %w: %v", h.ID, drivers.ErrInvalidConfig, err)
		}
		hs.cgroup = g
	}
	return hs, nil
}

// ownCgroup checks that dirs are task cgroups of this driver (under
// cgroupParent of its cgroup root) and returns them as one.
func (d *Driver) ownCgroup(dirs []string) (*taskCgroup, error) {
	if d.isolation() != nil {
		return nil, fmt.Errorf("task cgroup %v: isolation unavailable here", dirs)
	}
	want := 3
	if d.cgroups.unified {
		want = 1
	}
	if len(dirs) != want {
		return nil, fmt.Errorf("task cgroup %v: want %d dirs", dirs, want)
	}
	for _, dir := range dirs {
		parent := filepath.Dir(filepath.Clean(dir))
		if filepath.Base(parent) != cgroupParent || !within(parent, []string{d.cgroups.root}) || filepath.Base(dir) == cgroupParent {
			return nil, fmt.Errorf("task cgroup %s: not under %s/.../%s", dir, d.cgroups.root, cgroupParent)
		}
	}
	return &taskCgroup{unified: d.cgroups.unified, dirs: dirs}, nil
}

// RecoverTask implements drivers.Recoverer: it re-attaches to a task an
// earlier agent started, from its handle. A task whose init still runs
// is watched until it ends; one that ended meanwhile delivers the status
// its init wrote. With neither, the task is lost and the error wraps
// drivers.ErrTaskNotFound (what is left of it is for KillTask).
func (d *Driver) RecoverTask(h *drivers.TaskHandle) error {
	hs, err := d.parseHandle(h)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[h.ID]; ok {
		return fmt.Errorf("recover %s: %w", h.ID, drivers.ErrTaskExists)
	}
	t := &task{pid: hs.pid, cgroup: hs.cgroup, done: make(chan struct{}), recovered: true, isolated: hs.isolated,
		initStart: hs.initStart, statusFile: hs.statusFile, pidFile: hs.pidFile}
	if cfg := h.Config; cfg != nil {
		t.env, t.dir = taskEnv(cfg), cfg.TaskDir
		if u, err := taskuser.ForTask(cfg.User); err == nil {
			t.user = u
		}
	}
	if res, err := hostexec.ReadExitStatus(hs.statusFile); err == nil {
		t.finish(res)
		d.tasks[h.ID] = t
		d.logger.Debug("recovered task that ended", "task_id", h.ID, "result", res)
		return nil
	}
	if start, ok := hostexec.ProcStart(hs.pid); !ok || start != hs.initStart || (hs.bootID != "" && hs.bootID != hostexec.BootID()) {
		return fmt.Errorf("recover %s: task init %d is gone and left no exit status: %w", h.ID, hs.pid, drivers.ErrTaskNotFound)
	}
	if hs.isolated && hs.execSocket != "" {
		t.ctlPath = hs.execSocket
		if c, err := dialExec(hs.execSocket); err == nil {
			t.ctl = c
		} else {
			d.logger.Warn("re-attached task takes no exec sessions", "task_id", h.ID, "error", err)
		}
	}
	d.tasks[h.ID] = t
	go t.poll(recoverPollInterval)
	d.logger.Debug("task re-attached", "task_id", h.ID, "pid", hs.pid)
	return nil
}

// poll watches a recovered task until its init writes the status file
// or dies; it is the only goroutine of a recovered task.
func (t *task) poll(every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for range tick.C {
		if res, err := hostexec.ReadExitStatus(t.statusFile); err == nil {
			t.finish(res)
			return
		}
		if start, ok := hostexec.ProcStart(t.pid); ok && start == t.initStart {
			continue
		}
		res, err := hostexec.ReadExitStatus(t.statusFile) // written just before it exited?
		if err != nil {
			t.mu.Lock()
			killed := t.killed
			t.mu.Unlock()
			res = &drivers.ExitResult{ExitCode: -1, Err: fmt.Errorf("task init %d ended without an exit status: %w", t.pid, err)}
			if killed {
				res = &drivers.ExitResult{ExitCode: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)}
			}
		}
		t.finish(res)
		return
	}
}

// finish records a recovered task's result; call it once.
func (t *task) finish(res *drivers.ExitResult) {
	if t.cgroup != nil {
		res.OOMKilled = t.cgroup.oomKilled(res)
	}
	t.mu.Lock()
	t.reaped = true
	t.mu.Unlock()
	t.result = res
	close(t.done)
}

// signalRecovered signals a recovered task's process group while its
// init is the process the handle named and has not written its status.
// Called with t.mu held.
func (t *task) signalRecovered(sig syscall.Signal) (bool, error) {
	if _, err := os.Stat(t.statusFile); err == nil {
		return false, nil // ended; the poller has not noticed yet
	}
	if start, ok := hostexec.ProcStart(t.pid); !ok || start != t.initStart {
		return false, nil
	}
	if sig == syscall.SIGKILL {
		t.killed = true
		if t.cgroup != nil {
			t.cgroup.kill()
		}
	}
	return true, signalGroup(t.pid, sig)
}

// KillTask implements drivers.TaskKiller: it kills what the handle
// names without re-attaching (every process in the task's cgroup; without
// isolation, the init's process group while the init is the one the
// handle names), waits for it to die, removes the cgroup and the task's
// files. A task already gone is not an error.
func (d *Driver) KillTask(ctx context.Context, h *drivers.TaskHandle) error {
	hs, err := d.parseHandle(h)
	if err != nil {
		return d.killLegacy(ctx, h, err)
	}
	if err := d.killNoted(ctx, pidFile{TaskID: h.ID, Cgroups: cgroupDirs(hs.cgroup), InitPID: hs.pid, InitStart: hs.initStart, BootID: hs.bootID}); err != nil {
		return fmt.Errorf("kill %s: %w", h.ID, err)
	}
	for _, f := range []string{hs.statusFile, hs.pidFile} {
		if f != "" {
			_ = os.Remove(f)
		}
	}
	if hs.execSocket != "" {
		removeExecSocket(hs.execSocket)
	}
	return nil
}

// legacyCgroupKey is where handles of drivers before re-attach existed
// noted the task's memory cgroup dir (its only dir on cgroup v2).
const legacyCgroupKey = "cgroup"

// killLegacy kills the task of a handle written before re-attach
// existed (no init start time, no status file: parseErr), through the
// cgroup it names, which must be one of this driver's; the other
// controllers' dirs (cgroup v1) have the same name. Without one it
// returns parseErr: nothing names the task safely.
func (d *Driver) killLegacy(ctx context.Context, h *drivers.TaskHandle, parseErr error) error {
	mem := h.State[legacyCgroupKey]
	if mem == "" || h.State[stateInitStart] != "" {
		return parseErr
	}
	if err := d.isolation(); err != nil { // it also finds the cgroup root
		// No cgroups here: nothing to kill the task by, now or later.
		return fmt.Errorf("kill %s: %w: %v", h.ID, drivers.ErrInvalidConfig, err)
	}
	dirs := []string{mem}
	if !d.cgroups.unified {
		name := filepath.Base(mem)
		dirs = []string{
			filepath.Join(d.cgroups.root, "cpu", cgroupParent, name),
			filepath.Join(d.cgroups.root, "devices", cgroupParent, name),
			filepath.Join(d.cgroups.root, "memory", cgroupParent, name),
		}
		if filepath.Clean(mem) != dirs[2] {
			return fmt.Errorf("kill %s: %w: cgroup %s is not this driver's", h.ID, drivers.ErrInvalidConfig, mem)
		}
	}
	g, err := d.ownCgroup(dirs)
	if err != nil {
		return fmt.Errorf("kill %s: %w: %v", h.ID, drivers.ErrInvalidConfig, err)
	}
	if err := g.removeCtx(ctx); err != nil {
		return fmt.Errorf("kill %s: %w", h.ID, err)
	}
	return nil
}

func cgroupDirs(g *taskCgroup) []string {
	if g == nil {
		return nil
	}
	return g.dirs
}

// killNoted kills the task pf notes and waits for it: through its
// cgroup when it has one, else through the init's process group (only
// while the init is the process pf names, of this boot).
func (d *Driver) killNoted(ctx context.Context, pf pidFile) error {
	if len(pf.Cgroups) > 0 {
		g, err := d.ownCgroup(pf.Cgroups)
		if err != nil {
			return err
		}
		return g.removeCtx(ctx)
	}
	if pf.InitPID <= 1 || pf.InitPID == os.Getpid() || (pf.BootID != "" && pf.BootID != hostexec.BootID()) {
		return nil
	}
	start, ok := hostexec.ProcStart(pf.InitPID)
	if !ok || start != pf.InitStart {
		return nil
	}
	_ = syscall.Kill(-pf.InitPID, syscall.SIGKILL)
	for ctx.Err() == nil {
		if s, ok := hostexec.ProcStart(pf.InitPID); !ok || s != start {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("task init %d still running: %w", pf.InitPID, ctx.Err())
}

// KillOrphans implements drivers.OrphanKiller: it kills every exec task
// the driver noted in a pid file under allocRoot/<alloc>/ whose ID is
// not in keep (all of its cgroup), removes its cgroup and its files.
func (d *Driver) KillOrphans(ctx context.Context, allocRoot string, keep map[string]bool) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(allocRoot, "*", pidFilePrefix+"*.json"))
	if err != nil {
		return nil, fmt.Errorf("exec: find orphans: %w", err)
	}
	var killed []string
	var errs []error
	for _, f := range files {
		if ctx.Err() != nil {
			return killed, errors.Join(append(errs, ctx.Err())...)
		}
		buf, err := hostexec.ReadStateFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var pf pidFile
		if err := json.Unmarshal(buf, &pf); err != nil || pf.TaskID == "" {
			errs = append(errs, fmt.Errorf("exec: pid file %s: unreadable (%v)", f, err))
			continue
		}
		if keep[pf.TaskID] {
			continue
		}
		running := d.notedRunning(pf)
		if err := d.killNoted(ctx, pf); err != nil {
			errs = append(errs, fmt.Errorf("exec: orphan %s: %w", pf.TaskID, err))
			continue
		}
		if running {
			killed = append(killed, pf.TaskID)
			d.logger.Warn("killed orphaned task", "task_id", pf.TaskID, "pid", pf.InitPID, "cgroup", pf.Cgroups)
		}
		status, _ := stateFiles(filepath.Join(filepath.Dir(f), "task"), pf.TaskID)
		_ = os.Remove(status)
		if isExecSocket(pf.ExecSocket) {
			removeExecSocket(pf.ExecSocket)
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return killed, errors.Join(errs...)
}

// notedRunning reports whether anything of the task pf notes runs.
func (d *Driver) notedRunning(pf pidFile) bool {
	if len(pf.Cgroups) > 0 {
		g, err := d.ownCgroup(pf.Cgroups)
		return err == nil && len(g.procs()) > 0
	}
	start, ok := hostexec.ProcStart(pf.InitPID)
	return ok && start == pf.InitStart
}

// isExecSocket reports whether path names an exec socket the driver
// made (execlisten_linux.go), the only kind it removes from a handle or
// pid file.
func isExecSocket(path string) bool {
	base := filepath.Base(path)
	return filepath.IsAbs(path) && strings.HasPrefix(base, ".drover-exec-") && strings.HasSuffix(base, ".sock")
}
