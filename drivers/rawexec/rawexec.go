// Package rawexec is the raw_exec task driver: it runs a command as a
// plain host process, with no isolation beyond its own process group.
//
// It is off unless Config.Enabled is set (the agent's
// plugin "raw_exec" { config { enabled = true } }, and -dev): a disabled
// driver fingerprints as not detected, so the scheduler places no
// raw_exec task on the node, and Start refuses with drivers.ErrDisabled.
//
// A task runs as TaskConfig.User, or as nobody when it names none
// (package drivers/taskuser): the executor starts it with that uid, gid
// and groups, and Start makes the task dir the user's. An agent that is
// not root runs tasks as its own user and refuses any other. The task
// dir and its parents must be searchable by the user; Start checks.
//
// The task's environment is exactly TaskConfig.Env plus PATH and HOME
// defaults when those are absent; nothing leaks from the agent's own
// environment. The process runs in the task dir, in a new process group,
// so Stop and Destroy signal the task and every child it spawned, and
// children still in the group when the task's main process exits are
// killed then. Output is appended to the given stdout/stderr logs,
// rotated per TaskConfig.LogMaxFiles and LogMaxFileSizeMB by the executor.
//
// ExecTask (drivers.Execer) runs a command as a plain child of the agent
// with the task's environment (as above), in its task dir and as its
// user: raw_exec has no isolation to enter. See exec.go.
//
// Each task is started through an executor (see executor.go): the
// agent's binary re-executed in its own session, which starts the task,
// waits for it and writes its exit status to a file beside the task dir
// (in its parent, the agent's: not in the task dir, which the task's
// user owns and could plant a status or a symlink in). So
// the task survives the agent being killed, and a restarted agent
// re-attaches with RecoverTask from the handle's State ("pid",
// "shim_pid", "shim_start", "status_file").
//
// Driver config:
//
//	command = "/bin/sh"            # required; looked up in the task's PATH when it has no "/"
//	args    = ["-c", "echo hi"]    # optional list of strings
//
// It must not decide restarts or know about allocations: see package
// drivers.
package rawexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
	"github.com/droverhq/drover/drivers/taskuser"
	"github.com/droverhq/drover/structs"
)

// Name is the driver's name in job files.
const Name = "raw_exec"

// DefaultPath is the PATH a task gets when its env sets none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var (
	_ drivers.Driver    = (*Driver)(nil)
	_ drivers.Signaler  = (*Driver)(nil)
	_ drivers.Recoverer = (*Driver)(nil)
	_ drivers.Execer    = (*Driver)(nil)
)

// DefaultPollInterval is how often a recovered task (whose executor is
// no longer the agent's child) is checked for its end.
const DefaultPollInterval = 100 * time.Millisecond

// Handle state keys.
const (
	statePID        = "pid"
	stateShimPID    = "shim_pid"
	stateShimStart  = "shim_start"
	stateStatusFile = "status_file"
)

// Config configures a Driver.
type Config struct {
	// ExecutorPath is the binary re-executed as the task's executor;
	// "" is the running program (os.Executable), which works for any
	// binary that links this package.
	ExecutorPath string
	// PollInterval is how often a recovered task is checked for its
	// end; 0 is DefaultPollInterval.
	PollInterval time.Duration
	// Enabled turns the driver on. Off, it is not detected and starts
	// nothing.
	Enabled bool
}

// disabledReason says why a disabled driver runs nothing and how to
// turn it on.
const disabledReason = `raw_exec is disabled on this client; enable it with enabled = true in the config block of the agent config's plugin "raw_exec" block`

// Driver runs raw_exec tasks. The zero value is not usable; call New.
type Driver struct {
	logger hclog.Logger
	cfg    Config

	mu    sync.Mutex
	tasks map[string]*task
}

// task is one started (or recovered) task. done is closed after result
// is set.
//
// The task's process group (ID = the task's PID) is signalled only
// under mu and only until the task is known to have ended: once the
// executor reaped it, the kernel may hand the ID to someone else.
type task struct {
	pid        int
	shimPID    int
	statusFile string
	done       chan struct{}
	result     *drivers.ExitResult
	// env (with PATH and HOME defaults), dir and user are the task's,
	// for the commands ExecTask runs in it; env is nil for a task
	// recovered from a handle without its config.
	env  map[string]string
	dir  string
	user *taskuser.User

	mu    sync.Mutex
	ended bool
}

// New returns a raw_exec driver with the default Config: disabled.
// logger may be nil.
func New(logger hclog.Logger) *Driver { return NewWithConfig(logger, Config{}) }

// NewWithConfig returns a raw_exec driver. logger may be nil.
func NewWithConfig(logger hclog.Logger, cfg Config) *Driver {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	return &Driver{logger: logger.Named(Name), cfg: cfg, tasks: map[string]*task{}}
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Fingerprint implements drivers.Driver. raw_exec needs nothing but the
// ability to start processes, so it is detected and healthy whenever it
// is enabled.
func (d *Driver) Fingerprint(context.Context) *structs.DriverInfo {
	if !d.cfg.Enabled {
		return &structs.DriverInfo{Detected: false, Healthy: false, HealthDescription: disabledReason}
	}
	return &structs.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy"}
}

// Start implements drivers.Driver: it starts the task's executor, which
// starts the task, and returns once the task runs.
func (d *Driver) Start(_ context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, fmt.Errorf("%w: missing task ID", drivers.ErrInvalidConfig)
	}
	if !d.cfg.Enabled {
		return nil, fmt.Errorf("%w: %s", drivers.ErrDisabled, disabledReason)
	}
	command, args, err := parseConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	u, err := taskuser.Prepare(cfg, true)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	// No isolation: a volume is a symlink in the task dir.
	if err := drivers.LinkMounts(cfg.TaskDir, cfg.Mounts); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[cfg.ID]; ok {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, drivers.ErrTaskExists)
	}
	env := taskEnv(cfg)
	path, err := lookPath(command, env["PATH"], cfg.TaskDir)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	spec := &executorSpec{
		Path: path, Args: args, Env: (&drivers.TaskConfig{Env: env}).EnvList(), Dir: cfg.TaskDir,
		Stdout: cfg.StdoutPath, Stderr: cfg.StderrPath, Logs: cfg.LogOptions(),
		StatusFile: statusPath(cfg.TaskDir, cfg.ID), User: u.String(),
		PIDFile: pidPath(cfg.TaskDir, cfg.ID), TaskID: cfg.ID,
	}
	t, shimStart, err := d.startExecutor(spec)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	t.env, t.dir, t.user = env, cfg.TaskDir, u
	d.tasks[cfg.ID] = t
	d.logger.Debug("task started", "task_id", cfg.ID, "pid", t.pid, "executor_pid", t.shimPID, "command", path, "user", u.Name)
	return &drivers.TaskHandle{
		ID:        cfg.ID,
		Driver:    Name,
		Config:    cfg,
		StartedAt: time.Now(),
		State: map[string]string{
			statePID:        strconv.Itoa(t.pid),
			stateShimPID:    strconv.Itoa(t.shimPID),
			stateShimStart:  strconv.FormatUint(shimStart, 10),
			stateStatusFile: spec.StatusFile,
		},
	}, nil
}

// RecoverTask implements drivers.Recoverer: it re-attaches to a task an
// earlier agent started, from its handle. A task whose executor still
// runs is watched until it ends; one that ended meanwhile delivers the
// result its executor wrote. With neither, the task is lost and the
// error wraps drivers.ErrTaskNotFound.
func (d *Driver) RecoverTask(h *drivers.TaskHandle) error {
	if h == nil || h.ID == "" {
		return fmt.Errorf("%w: missing task handle", drivers.ErrInvalidConfig)
	}
	pid, err1 := strconv.Atoi(h.State[statePID])
	shimPID, err2 := strconv.Atoi(h.State[stateShimPID])
	shimStart, err3 := strconv.ParseUint(h.State[stateShimStart], 10, 64)
	statusFile := h.State[stateStatusFile]
	if err := errors.Join(err1, err2, err3); err != nil || statusFile == "" || pid <= 0 {
		return fmt.Errorf("recover %s: %w: bad handle state %v", h.ID, drivers.ErrInvalidConfig, h.State)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[h.ID]; ok {
		return fmt.Errorf("recover %s: %w", h.ID, drivers.ErrTaskExists)
	}
	t := &task{pid: pid, shimPID: shimPID, statusFile: statusFile, done: make(chan struct{})}
	if h.Config != nil {
		t.env, t.dir = taskEnv(h.Config), h.Config.TaskDir
		if u, err := taskuser.ForTask(h.Config.User); err == nil {
			t.user = u
		}
	}
	if res, err := hostexec.ReadExitStatus(statusFile); err == nil {
		t.finish(res)
		d.tasks[h.ID] = t
		d.logger.Debug("recovered task that ended", "task_id", h.ID, "result", res)
		return nil
	}
	if start, ok := hostexec.ProcStart(shimPID); !ok || start != shimStart {
		return fmt.Errorf("recover %s: executor %d is gone and left no exit status: %w", h.ID, shimPID, drivers.ErrTaskNotFound)
	}
	d.tasks[h.ID] = t
	go t.poll(d.cfg.PollInterval, shimStart)
	d.logger.Debug("task re-attached", "task_id", h.ID, "pid", pid, "executor_pid", shimPID)
	return nil
}

// finish records the task's result; call it once.
func (t *task) finish(res *drivers.ExitResult) {
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
	t.result = res
	close(t.done)
}

// waitChild reaps the executor (a child of this agent) and reads the
// status it wrote. It is the only goroutine of a started task.
func (t *task) waitChild(cmd *exec.Cmd) {
	err := cmd.Wait()
	res, serr := hostexec.ReadExitStatus(t.statusFile)
	if serr != nil {
		res = &drivers.ExitResult{ExitCode: -1, Err: fmt.Errorf("executor ended (%v) without an exit status: %w", err, serr)}
	}
	t.finish(res)
}

// poll watches a recovered task until its executor writes the status
// file or dies; it is the only goroutine of a recovered task.
func (t *task) poll(every time.Duration, shimStart uint64) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for range tick.C {
		if res, err := hostexec.ReadExitStatus(t.statusFile); err == nil {
			t.finish(res)
			return
		}
		if start, ok := hostexec.ProcStart(t.shimPID); ok && start == shimStart {
			continue
		}
		res, err := hostexec.ReadExitStatus(t.statusFile) // written just before it exited?
		if err != nil {
			res = &drivers.ExitResult{ExitCode: -1, Err: fmt.Errorf("executor %d ended without an exit status: %w", t.shimPID, err)}
		}
		t.finish(res)
		return
	}
}

// signal signals the task's process group; it reports false, sending
// nothing, once the task has ended.
func (t *task) signal(sig syscall.Signal) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return false, nil
	}
	if _, err := os.Stat(t.statusFile); err == nil {
		return false, nil // ended; the watcher has not noticed yet
	}
	return true, signalGroup(t.pid, sig)
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

func (d *Driver) lookup(taskID string) (*task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.tasks[taskID]
	if !ok {
		return nil, fmt.Errorf("task %s: %w", taskID, drivers.ErrTaskNotFound)
	}
	return t, nil
}

// Wait implements drivers.Driver.
func (d *Driver) Wait(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	t, err := d.lookup(taskID)
	if err != nil {
		return nil, err
	}
	return drivers.WaitProcess(ctx, t.done, func() drivers.ExitResult { return *t.result }), nil
}

// Stop implements drivers.Driver: signal the process group, wait up to
// timeout, then SIGKILL the group and wait for the exit.
func (d *Driver) Stop(taskID string, timeout time.Duration, signal string) error {
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	return drivers.StopProcess(d.logger, taskID, t.signal, t.done, sig, timeout)
}

// Signal implements drivers.Signaler: the signal goes to the whole group.
func (d *Driver) Signal(taskID string, signal string) error {
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	return drivers.SignalProcess(taskID, t.signal, sig)
}

// Destroy implements drivers.Driver. The whole process group gets
// SIGKILL, so children the task left behind die with it (if the task
// already exited, its executor did that), and the status file goes.
func (d *Driver) Destroy(taskID string) error {
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	if _, err := t.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("destroy %s: %w", taskID, err)
	}
	<-t.done
	_ = os.Remove(t.statusFile)
	d.mu.Lock()
	delete(d.tasks, taskID)
	d.mu.Unlock()
	return nil
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

// parseConfig reads command and args from the driver config. args may
// arrive as []string (in-process) or []any (decoded from msgpack/JSON).
func parseConfig(cfg map[string]any) (command string, args []string, err error) {
	command, _ = cfg["command"].(string)
	if strings.TrimSpace(command) == "" {
		return "", nil, fmt.Errorf("%w: raw_exec needs a \"command\" string", drivers.ErrInvalidConfig)
	}
	switch v := cfg["args"].(type) {
	case nil:
	case []string:
		args = append(args, v...)
	case []any:
		for i, a := range v {
			s, ok := a.(string)
			if !ok {
				return "", nil, fmt.Errorf("%w: raw_exec args[%d] is %T, want a string", drivers.ErrInvalidConfig, i, a)
			}
			args = append(args, s)
		}
	default:
		return "", nil, fmt.Errorf("%w: raw_exec args is %T, want a list of strings", drivers.ErrInvalidConfig, v)
	}
	return command, args, nil
}

// taskEnv is the task's env with PATH and HOME defaults.
func taskEnv(cfg *drivers.TaskConfig) map[string]string {
	env := make(map[string]string, len(cfg.Env)+2)
	for k, v := range cfg.Env {
		env[k] = v
	}
	if env["PATH"] == "" {
		env["PATH"] = DefaultPath
	}
	if env["HOME"] == "" && cfg.TaskDir != "" {
		env["HOME"] = cfg.TaskDir
	}
	return env
}

// lookPath resolves a bare command name in the task's PATH (not the
// agent's). Names with a "/" are used as given; relative ones are
// resolved against the task dir by exec.
func lookPath(command, pathEnv, dir string) (string, error) {
	if strings.Contains(command, "/") {
		return command, nil
	}
	for _, p := range filepath.SplitList(pathEnv) {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		cand := filepath.Join(p, command)
		if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", fmt.Errorf("%w: command %q not found in task PATH %q", drivers.ErrInvalidConfig, command, pathEnv)
}
