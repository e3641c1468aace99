package exec

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
	"github.com/droverhq/drover/drivers/taskuser"
)

// handshakeLimit bounds how long Start waits for the init to report
// that the command runs.
const handshakeLimit = 10 * time.Second

// launchSpec is one task start.
type launchSpec struct {
	cfg *drivers.TaskConfig
	// path is the command: resolved on the host when not isolated, as
	// given (resolved by the init in the task's root) when isolated.
	path     string
	args     []string
	env      []string
	user     *taskuser.User
	isolated bool
	cgroups  *cgroupFS // nil when not isolated
	root     *rootSpec // nil when not isolated
	devices  []deviceRule
}

// task is one started task: its init process (a process group leader,
// in the host's PID numbering) and, when isolated, its cgroup. done is
// closed after result is set.
//
// The group is signalled only under mu and only until the init is
// reaped: the group's ID is the init's PID, which the kernel may reuse
// once it is reaped.
type task struct {
	cmd    *exec.Cmd
	pid    int
	cgroup *taskCgroup
	status *bufio.Reader // the init's reports
	done   chan struct{}
	result *drivers.ExitResult

	// For ExecTask: the task's environment, dir and user, and, when
	// isolated, the init's exec control socket (see execinit_linux.go).
	env  []string
	dir  string
	user *taskuser.User
	ctl  *net.UnixConn
	// ctlPath is the init's listening exec socket (execlisten_linux.go).
	ctlPath string

	// isolated tasks take exec sessions through ctl only. recovered
	// tasks were re-attached from a handle: their init is not this
	// agent's child, initStart names it across PID reuse, and killed
	// says the driver sent it SIGKILL (recover_linux.go).
	isolated   bool
	recovered  bool
	initStart  uint64
	statusFile string // where the init writes the command's exit
	pidFile    string // the driver's note of the task, for KillOrphans

	mu     sync.Mutex
	reaped bool
	killed bool
}

// launch starts the init, puts it in the task's cgroup, lets it go and
// waits until it reports the command started.
func launch(s launchSpec) (*task, error) {
	t := &task{done: make(chan struct{}), env: s.env, dir: s.cfg.TaskDir, user: s.user, isolated: s.isolated}
	t.statusFile, t.pidFile = stateFiles(s.cfg.TaskDir, s.cfg.ID)
	_ = os.Remove(t.statusFile) // from an earlier run of the same ID
	if s.cgroups != nil {
		lim := limits{devices: s.devices}
		if r := s.cfg.Resources; r != nil {
			lim.cpuShares, lim.memoryMB = r.Cpu.CpuShares, r.Memory.MemoryMB
			if r.Memory.MemoryMaxMB > r.Memory.MemoryMB {
				// memory_max: memory is the soft reservation, memory_max the limit.
				lim.memoryMB, lim.memoryLowMB = r.Memory.MemoryMaxMB, r.Memory.MemoryMB
			}
		}
		g, err := s.cgroups.create(cgroupName(s.cfg.ID), lim)
		if err != nil {
			return nil, err
		}
		t.cgroup = g
	}
	// Noted before anything runs in the cgroup: an agent that dies from
	// here on leaves a task KillOrphans can find.
	if err := writePIDFile(t.pidFile, pidFile{TaskID: s.cfg.ID, Cgroups: cgroupDirs(t.cgroup)}); err != nil {
		t.release()
		return nil, err
	}
	readyW, err := t.startInit(s)
	if err != nil {
		t.release()
		return nil, err
	}
	if err := t.handshake(readyW); err != nil {
		_ = syscall.Kill(-t.pid, syscall.SIGKILL)
		_ = t.cmd.Wait()
		t.release()
		return nil, err
	}
	t.initStart, _ = hostexec.ProcStart(t.pid)
	pf := pidFile{TaskID: s.cfg.ID, Cgroups: cgroupDirs(t.cgroup), InitPID: t.pid, InitStart: t.initStart, ExecSocket: t.ctlPath}
	if err := writePIDFile(t.pidFile, pf); err != nil {
		_ = syscall.Kill(-t.pid, syscall.SIGKILL)
		_ = t.cmd.Wait()
		t.release()
		return nil, err
	}
	return t, nil
}

// release closes the exec control socket, removes the cgroup and the
// task's pid and status files; for a task whose init has exited.
func (t *task) release() error {
	if t.ctl != nil {
		t.ctl.Close()
	}
	var err error
	if t.cgroup != nil {
		err = t.cgroup.remove()
	}
	if err == nil {
		// Kept while the cgroup is: KillOrphans finds it through them.
		_ = os.Remove(t.statusFile)
		_ = os.Remove(t.pidFile)
	}
	if t.ctlPath != "" {
		removeExecSocket(t.ctlPath)
	}
	return err
}

// startInit starts the init, blocked until readyW is written.
func (t *task) startInit(s launchSpec) (readyW *os.File, err error) {
	logs, err := logsSpec(s.cfg)
	if err != nil {
		return nil, err
	}
	var undo []func() // what a failed start closes or removes
	defer func() {
		if err != nil {
			for _, f := range undo {
				f()
			}
		}
	}()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	undo = append(undo, func() { readyW.Close() })
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer statusW.Close()
	undo = append(undo, func() { statusR.Close() })
	// The dir of the status file, open before the init changes its
	// root: it writes the command's exit there (recover_linux.go).
	stateDir, err := os.Open(filepath.Dir(t.statusFile))
	if err != nil {
		return nil, fmt.Errorf("task state dir: %w", err)
	}
	defer stateDir.Close()
	mode, attr := initPlain, &syscall.SysProcAttr{Setpgid: true}
	extra := []*os.File{readyR, statusW, nil, stateDir} // fd 5 (initCtlFD) when isolated
	env := append(s.env[:len(s.env):len(s.env)], logsEnv+"="+logs, userEnv+"="+s.user.String(),
		statusEnv+"="+filepath.Base(t.statusFile))
	if s.isolated {
		mode, attr.Cloneflags = initIsolated, isolationFlags
		files, root, err := t.openExecServer(s, &undo)
		if err != nil {
			return nil, err
		}
		defer closeAll(files)
		extra[initCtlFD-3] = files[0]
		extra = append(extra, files[1]) // initListenFD
		env = append(env, rootEnv+"="+root)
	}
	env, err = holdEnv(env) // loaderenv_linux.go
	if err != nil {
		return nil, err
	}
	t.cmd = &exec.Cmd{
		Path:        initPath,
		Args:        append([]string{s.path}, s.args...),
		Env:         append(env, initEnv+"="+mode),
		Dir:         s.cfg.TaskDir,
		ExtraFiles:  extra,
		SysProcAttr: attr,
	}
	// Args[0] is the init's own name; the init runs Args[1:].
	t.cmd.Args = append([]string{"drover-exec-init"}, t.cmd.Args...)
	if err := t.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start task init: %w", err)
	}
	t.pid = t.cmd.Process.Pid
	t.status = bufio.NewReader(statusR)
	return readyW, nil
}

// openExecServer prepares what an isolated init needs besides its pipes:
// its root (encoded for rootEnv) and its ends of the exec control
// socket pair and of the listening exec socket (execlisten_linux.go),
// which the caller closes once the init has them. What it makes is
// undone through undo if the start fails.
func (t *task) openExecServer(s launchSpec, undo *[]func()) (files []*os.File, root string, err error) {
	if root, err = s.root.encode(); err != nil {
		return nil, "", err
	}
	ctl, initCtl, err := execControl()
	if err != nil {
		return nil, "", err
	}
	t.ctl = ctl
	*undo = append(*undo, func() { ctl.Close() })
	ln, err := newExecListener(filepath.Dir(t.statusFile))
	if err != nil {
		initCtl.Close()
		return nil, "", err
	}
	t.ctlPath = ln.path
	*undo = append(*undo, func() { removeExecSocket(ln.path) })
	return []*os.File{initCtl, ln.file}, root, nil
}

// logsSpec is the logsEnv value for a task: absolute paths (the init
// runs in the task dir) and the rotation limits.
func logsSpec(cfg *drivers.TaskConfig) (string, error) {
	spec := initLogs{Options: cfg.LogOptions()}
	for _, p := range []struct {
		in  string
		out *string
	}{{cfg.StdoutPath, &spec.Stdout}, {cfg.StderrPath, &spec.Stderr}} {
		if p.in == "" {
			continue
		}
		abs, err := filepath.Abs(p.in)
		if err != nil {
			return "", fmt.Errorf("log path: %w", err)
		}
		*p.out = abs
	}
	buf, err := json.Marshal(spec)
	return string(buf), err
}

// handshake moves the init into the cgroup, lets it run the command and
// reads its "started" report.
func (t *task) handshake(readyW *os.File) error {
	defer readyW.Close()
	if t.cgroup != nil {
		if err := t.cgroup.add(t.pid); err != nil {
			return err
		}
	}
	if _, err := readyW.Write([]byte{1}); err != nil {
		return fmt.Errorf("release task init: %w", err)
	}
	type reply struct {
		line string
		err  error
	}
	ch := make(chan reply, 1)
	go func() {
		line, err := t.status.ReadString('\n')
		ch <- reply{strings.TrimSpace(line), err}
	}()
	select {
	case r := <-ch:
		switch {
		case strings.HasPrefix(r.line, "started "):
			return nil
		case strings.HasPrefix(r.line, "error "):
			return fmt.Errorf("task init: %s", strings.TrimPrefix(r.line, "error "))
		case strings.HasPrefix(r.line, "invalid "):
			return fmt.Errorf("%w: %s", drivers.ErrInvalidConfig, strings.TrimPrefix(r.line, "invalid "))
		default:
			return fmt.Errorf("task init exited before starting the command: %v", r.err)
		}
	case <-time.After(handshakeLimit):
		return fmt.Errorf("task init did not start the command within %v", handshakeLimit)
	}
}

// wait records how the task ended. It is the only goroutine per task; it
// ends when the init exits. The init's report of the command's exit wins
// over the init's own status (it is SIGKILLed when the task is killed).
func (t *task) wait() {
	line, _ := t.status.ReadString('\n')
	var err error
	if hostexec.WaitExited(t.pid) {
		t.mu.Lock()
		// Leftovers in the group (fallback mode) die with the task.
		_ = signalGroup(t.pid, syscall.SIGKILL)
		err = t.cmd.Wait()
		t.reaped = true
		t.mu.Unlock()
	} else {
		err = t.cmd.Wait()
		t.mu.Lock()
		t.reaped = true
		t.mu.Unlock()
	}
	res := reportedResult(strings.TrimSpace(line))
	if res == nil {
		res = exitResult(t.cmd.ProcessState, err)
	}
	if t.cgroup != nil {
		res.OOMKilled = t.cgroup.oomKilled(res)
	}
	t.result = res
	close(t.done)
}

// oomKilled reports whether the kernel killed a process of the cgroup
// for memory. failcnt (old v1 kernels) only counts hitting the limit, so
// there it takes a SIGKILL too.
func (g *taskCgroup) oomKilled(res *drivers.ExitResult) bool {
	n, exact, err := g.oomKills()
	if err != nil || n == 0 {
		return false
	}
	return exact || res.Signal == int(syscall.SIGKILL)
}

// reportedResult parses the init's "exit N" / "signal N" line; nil when
// the init did not report (it was killed).
func reportedResult(line string) *drivers.ExitResult {
	kind, num, ok := strings.Cut(line, " ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		return nil
	}
	switch kind {
	case "exit":
		return &drivers.ExitResult{ExitCode: n}
	case "signal":
		return &drivers.ExitResult{ExitCode: 128 + n, Signal: n}
	}
	return nil
}

func exitResult(ps *os.ProcessState, err error) *drivers.ExitResult {
	if ps == nil {
		return &drivers.ExitResult{ExitCode: -1, Err: err}
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		return &drivers.ExitResult{ExitCode: ps.ExitCode()}
	}
	if ws.Signaled() {
		sig := int(ws.Signal())
		return &drivers.ExitResult{ExitCode: 128 + sig, Signal: sig}
	}
	return &drivers.ExitResult{ExitCode: ws.ExitStatus()}
}

// signal signals the task's process group; it reports false, sending
// nothing, once the init has been reaped.
func (t *task) signal(sig syscall.Signal) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped {
		return false, nil
	}
	if t.recovered {
		return t.signalRecovered(sig)
	}
	return true, signalGroup(t.pid, sig)
}

// signalGroup signals every process in the group; a group that is
// already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if err == nil || errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return fmt.Errorf("signal process group %d with %v: %w", pgid, sig, err)
}
