// Package rawexec is the raw_exec task driver: it runs a command as a
// plain host process, with no isolation beyond its own process group.
//
// The task's environment is exactly TaskConfig.Env plus PATH and HOME
// defaults when those are absent; nothing leaks from the agent's own
// environment. The process runs in the task dir, in a new process group
// (Setpgid), so Stop and Destroy signal the task and every child it
// spawned, and children still in the group when the task's main process
// exits are killed then. Output is appended to the given stdout/stderr files.
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
	"io/fs"
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
	"github.com/droverhq/drover/structs"
)

// Name is the driver's name in job files.
const Name = "raw_exec"

// DefaultPath is the PATH a task gets when its env sets none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var (
	_ drivers.Driver   = (*Driver)(nil)
	_ drivers.Signaler = (*Driver)(nil)
)

// Driver runs raw_exec tasks. The zero value is not usable; call New.
type Driver struct {
	logger hclog.Logger

	mu    sync.Mutex
	tasks map[string]*task
}

// task is one started process. done is closed after result is set.
//
// The process group is signalled only under mu and only until the
// leader is reaped: the group's ID is the leader's PID, which the kernel
// may hand to an unrelated process once the leader is reaped and its
// group is empty, so a late kill(-pgid) could hit someone else's task.
type task struct {
	cmd    *exec.Cmd
	pgid   int
	done   chan struct{}
	result *drivers.ExitResult

	mu     sync.Mutex
	reaped bool
}

// New returns a raw_exec driver. logger may be nil.
func New(logger hclog.Logger) *Driver {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Driver{logger: logger.Named(Name), tasks: map[string]*task{}}
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Fingerprint implements drivers.Driver. raw_exec needs nothing but the
// ability to start processes, so it is always detected and healthy.
func (d *Driver) Fingerprint(context.Context) *structs.DriverInfo {
	return &structs.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy"}
}

// Start implements drivers.Driver.
func (d *Driver) Start(_ context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, fmt.Errorf("%w: missing task ID", drivers.ErrInvalidConfig)
	}
	command, args, err := parseConfig(cfg.Config)
	if err != nil {
		return nil, err
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
	cmd, err := buildCmd(cfg, path, args, env)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	err = cmd.Start()
	closeOutputs(cmd)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		// The command is missing or not executable: no retry changes that.
		return nil, fmt.Errorf("start %s: %w: %w", cfg.ID, drivers.ErrInvalidConfig, err)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	t := &task{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{})}
	d.tasks[cfg.ID] = t
	go t.wait()
	d.logger.Debug("task started", "task_id", cfg.ID, "pid", cmd.Process.Pid, "command", path)
	return &drivers.TaskHandle{
		ID:        cfg.ID,
		Driver:    Name,
		Config:    cfg,
		StartedAt: time.Now(),
		State:     map[string]string{"pid": strconv.Itoa(cmd.Process.Pid)},
	}, nil
}

// wait reaps the process and records its result. It is the only
// goroutine per task; it ends when the process exits. Once the leader has
// exited, and before it is reaped, whatever the task left running in its
// group is killed: the task is over, and the group ID is still safe to
// use.
func (t *task) wait() {
	var err error
	if waitExited(t.cmd.Process.Pid) {
		t.mu.Lock()
		_ = signalGroup(t.pgid, syscall.SIGKILL)
		err = t.cmd.Wait() // reaps a zombie: returns at once
		t.reaped = true
		t.mu.Unlock()
	} else {
		err = t.cmd.Wait()
		t.mu.Lock()
		t.reaped = true
		t.mu.Unlock()
	}
	t.result = exitResult(t.cmd.ProcessState, err)
	close(t.done)
}

// signal signals the task's process group; it reports false, sending
// nothing, once the leader has been reaped.
func (t *task) signal(sig syscall.Signal) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped {
		return false, nil
	}
	return true, signalGroup(t.pgid, sig)
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
	ch := make(chan *drivers.ExitResult, 1)
	go func() {
		defer close(ch)
		select {
		case <-t.done:
			r := *t.result
			ch <- &r
		case <-ctx.Done():
		}
	}()
	return ch, nil
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
	sent, err := t.signal(sig)
	if err != nil {
		return fmt.Errorf("stop %s: %w", taskID, err)
	}
	if !sent {
		return nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-t.done:
		return nil
	case <-timer.C:
	}
	d.logger.Debug("task ignored kill signal; sending SIGKILL", "task_id", taskID, "signal", sig, "timeout", timeout)
	if _, err := t.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop %s: %w", taskID, err)
	}
	<-t.done
	return nil
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
	sent, err := t.signal(sig)
	if err != nil {
		return fmt.Errorf("signal %s: %w", taskID, err)
	}
	if !sent {
		return fmt.Errorf("signal %s: task has exited", taskID)
	}
	return nil
}

// Destroy implements drivers.Driver. The whole process group gets
// SIGKILL, so children the task left behind die with it (if the task
// already exited, wait did that).
func (d *Driver) Destroy(taskID string) error {
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	if _, err := t.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("destroy %s: %w", taskID, err)
	}
	<-t.done
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

func buildCmd(cfg *drivers.TaskConfig, path string, args []string, env map[string]string) (*exec.Cmd, error) {
	stdout, err := openOutput(cfg.StdoutPath)
	if err != nil {
		return nil, err
	}
	stderr, err := openOutput(cfg.StderrPath)
	if err != nil {
		stdout.Close()
		return nil, err
	}
	envCfg := &drivers.TaskConfig{Env: env}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{path}, args...),
		Env:         envCfg.EnvList(),
		Dir:         cfg.TaskDir,
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	return cmd, nil
}

// openOutput opens path for appending; "" discards output.
func openOutput(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open output: %w", err)
	}
	return f, nil
}

// closeOutputs closes the parent's copies of the output files; the
// child keeps its own.
func closeOutputs(cmd *exec.Cmd) {
	for _, w := range []any{cmd.Stdout, cmd.Stderr} {
		if f, ok := w.(*os.File); ok {
			f.Close()
		}
	}
}
