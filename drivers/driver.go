// Package drivers is the task driver contract: the small interface every
// driver implements (start a task, wait for it, stop it, clean up), the
// optional capabilities a driver may add, and the types that cross that
// boundary.
//
// A driver runs processes (or containers) and reports how they ended; it
// owns nothing else. It must not know about allocations, restart policies
// or servers: the client's task runner decides when to start, restart or
// kill, and the driver only does it. Drivers import structs and nothing
// else from Drover. Every driver must pass the conformance suite in
// drivers/drivertest.
package drivers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"syscall"
	"time"

	"github.com/droverhq/drover/drivers/logrotate"
	"github.com/droverhq/drover/structs"
)

// Sentinel errors a driver returns, tested with errors.Is.
var (
	// ErrTaskNotFound: the driver has no task with that ID (never
	// started, or destroyed).
	ErrTaskNotFound = errors.New("drivers: task not found")
	// ErrTaskExists: Start was called with the ID of a task the driver
	// still holds; Destroy it first.
	ErrTaskExists = errors.New("drivers: task already exists")
	// ErrInvalidConfig: the task's driver config is missing or wrong.
	ErrInvalidConfig = errors.New("drivers: invalid task config")
	// ErrTaskNotRunning: the driver holds the task but it has exited, so
	// it cannot take what needs a live task (ExecTask).
	ErrTaskNotRunning = errors.New("drivers: task is not running")
	// ErrDisabled: the driver, or what the task asks of it (a user, a
	// host volume, privileges), is turned off in this client's config.
	// Like ErrInvalidConfig, no restart on this client can help.
	ErrDisabled = errors.New("drivers: disabled on this client")
)

// Driver runs tasks. Methods are safe for concurrent use; task IDs are
// chosen by the caller and unique among the tasks the driver holds.
//
// Lifecycle of a task: Start -> (Wait ... Stop) -> Destroy. A task that
// exited stays known to the driver (its result can still be waited for)
// until Destroy.
type Driver interface {
	// Name is the name jobs use in `driver = "..."`.
	Name() string
	// Fingerprint reports whether the driver can run tasks on this host.
	Fingerprint(ctx context.Context) *structs.DriverInfo
	// Start launches the task and returns once it is running. It does
	// not wait for the task to finish.
	Start(ctx context.Context, cfg *TaskConfig) (*TaskHandle, error)
	// Wait returns a channel that receives the task's exit result once
	// and is then closed. A task that already exited delivers at once.
	// If ctx ends first the channel is closed without a result. Each
	// call gets its own channel.
	Wait(ctx context.Context, taskID string) (<-chan *ExitResult, error)
	// Stop asks the task to exit with signal (a name such as "SIGTERM";
	// "" means SIGTERM), waits up to timeout, then kills it (SIGKILL)
	// and returns once it has exited. Stopping an exited task is a
	// no-op.
	Stop(taskID string, timeout time.Duration, signal string) error
	// Destroy kills the task if it still runs, releases everything the
	// driver holds for it and forgets it. Files the task wrote (its
	// logs, its task dir) are the caller's and are left alone.
	Destroy(taskID string) error
}

// Signaler is implemented by drivers that can deliver a signal to a
// running task without stopping it.
type Signaler interface {
	Signal(taskID string, signal string) error
}

// Recoverer is implemented by drivers that can re-attach to a task
// started by an earlier run of the agent, from the handle it returned
// then (raw_exec and docker do). The client persists handles in its
// state store (client/state) and recovers them after a restart, so an
// agent restart neither orphans nor duplicates tasks.
type Recoverer interface {
	RecoverTask(handle *TaskHandle) error
}

// OrphanKiller is implemented by drivers whose tasks outlive the agent
// and leave a trace of their own under the alloc dirs (or, for docker,
// on the containers' labels) that does not depend on the client's
// state store. A client that lost its state (a damaged state file moved
// aside) calls it before it runs anything, so that no task it cannot
// re-attach to keeps running (and holding GPUs) unknown to the servers.
type OrphanKiller interface {
	// KillOrphans kills every task of this driver belonging to an
	// allocation whose dir is under allocRoot, except the task IDs in
	// keep (those the client re-attaches to), and waits for them to
	// die. It returns the IDs of the tasks it killed.
	KillOrphans(ctx context.Context, allocRoot string, keep map[string]bool) ([]string, error)
}

// TaskKiller is implemented by Recoverers that can kill a task from
// its handle alone, without re-attaching to it. The client calls it
// when RecoverTask fails (the task may still run: a lost executor, an
// engine that did not answer), so that a task it cannot watch does not
// keep running, and holding GPUs, unknown to the servers.
type TaskKiller interface {
	// KillTask kills whatever still runs of the task h names (by what
	// h.State records: its process group, cgroup or container), waits
	// for it to die and releases what the driver made for it. A task
	// already gone is not an error; an error means it may still run.
	KillTask(ctx context.Context, h *TaskHandle) error
}

// Execer is implemented by drivers that can run a command inside a
// running task's environment (`alloc exec`): the task's filesystem view,
// namespaces, cgroup, user, working dir and environment, whatever the
// driver isolates the task with. Where a driver cannot give the command
// the task's isolation it fails the call; it never runs the command with
// less.
type Execer interface {
	// ExecTask runs opts.Command in the task and blocks until it exits.
	// A non-zero exit is a result, not an error. The command is killed,
	// and ExecTask returns promptly, when:
	//   - ctx ends: the error wraps ctx.Err();
	//   - the task exits or is destroyed: the error wraps
	//     ErrTaskNotRunning.
	// Errors: an unknown task wraps ErrTaskNotFound, an exited one
	// ErrTaskNotRunning, an empty Command ErrInvalidConfig.
	//
	// When ExecTask returns, the command's output has been written to
	// opts.Stdout and opts.Stderr (a process it left holding them is
	// waited for only briefly) and neither is written again. Stdin is
	// read by a goroutine of its own: a Read of it may still be in
	// flight when ExecTask returns; what it yields is dropped and no
	// other Read follows, so a caller whose Stdin can block forever
	// should unblock it (close it) after ExecTask returns.
	ExecTask(ctx context.Context, taskID string, opts *ExecOptions) (*ExecResult, error)
}

// ExecOptions is one command run by Execer.ExecTask.
type ExecOptions struct {
	// Command is the argv; required. Command[0] without a "/" is looked
	// up in the task's PATH (as the task sees it).
	Command []string
	// TTY runs the command on a new pseudo-terminal (its controlling
	// terminal, the session leader's): stdin, stdout and stderr are all
	// the terminal, so output (with the terminal's echo of the input)
	// arrives on Stdout only and Stderr is unused.
	TTY bool
	// Stdin feeds the command's standard input; nil gives it none (it
	// reads EOF at once; with TTY the terminal gets ^D at once). Its EOF
	// closes the command's stdin; with TTY it
	// is sent as the terminal's EOF character (^D, as Nomad does), which
	// a program reading lines sees as end of input and one that put the
	// terminal in raw mode sees as the byte 0x04.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output; nil discards it.
	Stdout, Stderr io.Writer
	// Resize carries terminal size changes while the command runs (with
	// TTY; without, sizes are read and dropped). A size already waiting
	// on it when ExecTask starts is the terminal's initial size. May be
	// nil. ExecTask stops reading it when it returns.
	Resize <-chan TerminalSize
}

// Validate checks what every driver needs: a command.
func (o *ExecOptions) Validate() error {
	if o == nil || len(o.Command) == 0 || o.Command[0] == "" {
		return fmt.Errorf("%w: exec needs a command", ErrInvalidConfig)
	}
	return nil
}

// TerminalSize is a terminal's size in character cells.
type TerminalSize struct {
	Height, Width uint16
}

// ExecResult is how an exec'd command ended.
type ExecResult struct {
	// ExitCode is the command's exit status; for one killed by a signal
	// it is 128+signal, as shells report it.
	ExitCode int
}

// TaskConfig is everything a driver needs to start one task.
type TaskConfig struct {
	// ID names the task in the driver; unique among the tasks it holds.
	ID       string
	AllocID  string
	JobName  string
	TaskName string
	// Env is the task's complete environment: drivers add nothing but
	// their documented defaults (raw_exec: PATH and HOME when absent).
	Env map[string]string
	// Config is the driver-specific part of the task, already
	// interpolated (raw_exec: "command" and "args").
	Config map[string]any
	// TaskDir is the task's working directory; it exists.
	TaskDir string
	// AllocDir is the allocation's shared dir (DROVER_ALLOC_DIR), which
	// drivers that confine the task's filesystem (exec) expose at the
	// same path; "" when there is none.
	AllocDir string
	// User is the user to run the task as, a name or a numeric ID; ""
	// is the driver's default (exec and raw_exec: nobody). The client
	// has already checked it against its user policy.
	User string
	// StdoutPath and StderrPath name the task's output logs, appended to
	// and created if missing. With LogMaxFiles 0 each is exactly the
	// file written. With LogMaxFiles > 0 each is a base name and the
	// output rotates through <path>.0, <path>.1, ... (package
	// drivers/logrotate): a file is closed at LogMaxFileSizeMB and the
	// oldest beyond LogMaxFiles removed.
	StdoutPath string
	StderrPath string
	// LogMaxFiles and LogMaxFileSizeMB bound each stream's files (the
	// task's `logs` block); 0 files turns rotation off.
	LogMaxFiles      int
	LogMaxFileSizeMB int
	Resources        *structs.AllocatedTaskResources
	// DeviceIDs are the device instances (GPU UUIDs) assigned to the
	// task; drivers that isolate devices expose only these.
	DeviceIDs []string
	// MPSPipeDir is the MPS daemon's pipe dir of the task's GPU slice,
	// set by the client ("" for none); drivers that confine the task's
	// filesystem expose it. Never taken from the task's env, which the
	// job writes.
	MPSPipeDir string
	// Ports are the allocation's ports; drivers that map ports (docker's
	// "ports" config, by label) bind these.
	Ports []structs.AllocatedPortMapping
	// Mounts are the task's host volume mounts (mounts.go).
	Mounts []*MountConfig
}

// LogOptions returns the rotation limits of the task's output logs.
func (c *TaskConfig) LogOptions() logrotate.Options {
	if c.LogMaxFiles <= 0 {
		return logrotate.Options{}
	}
	size := c.LogMaxFileSizeMB
	if size <= 0 {
		size = structs.DefaultLogConfig().MaxFileSizeMB
	}
	return logrotate.Options{MaxFiles: c.LogMaxFiles, MaxFileBytes: int64(size) * logrotate.MB}
}

// EnvList returns Env as sorted "KEY=value" strings.
func (c *TaskConfig) EnvList() []string {
	out := make([]string, 0, len(c.Env))
	for k, v := range c.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// TaskHandle identifies a started task. State holds what a Recoverer
// needs to re-attach (for a process: its PID); it is plain data so the
// client can persist it.
type TaskHandle struct {
	ID        string
	Driver    string
	Config    *TaskConfig
	StartedAt time.Time
	State     map[string]string
}

// ExitResult is how a task ended.
type ExitResult struct {
	// ExitCode is the process's exit status; for a process killed by a
	// signal it is 128+signal, as shells report it.
	ExitCode int
	// Signal is the signal that killed the process, or 0.
	Signal int
	// OOMKilled is set when the driver knows the kernel killed the task
	// for memory.
	OOMKilled bool
	// Err is set when the driver lost track of the task (the result is
	// then unknown rather than a failure of the task itself).
	Err error
}

// Successful reports whether the task exited 0 on its own.
func (r *ExitResult) Successful() bool {
	return r.ExitCode == 0 && r.Signal == 0 && r.Err == nil
}

func (r *ExitResult) String() string {
	switch {
	case r.Err != nil:
		return fmt.Sprintf("exit unknown: %v", r.Err)
	case r.Signal != 0:
		return fmt.Sprintf("exit code %d, signal %d (%s)", r.ExitCode, r.Signal, syscall.Signal(r.Signal))
	default:
		return fmt.Sprintf("exit code %d", r.ExitCode)
	}
}
