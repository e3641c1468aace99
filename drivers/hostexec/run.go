package hostexec

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/droverhq/drover/drivers"
)

// DrainGrace bounds how long a session waits, once its command exited,
// for output still held open by a process it left behind.
const DrainGrace = 500 * time.Millisecond

// SessionAttr is how an exec'd command is started: the leader of a
// process group of its own (so a kill reaches what it spawned, and the
// task's own signals do not reach it), and with TTY of a new session
// whose controlling terminal is its stdin.
func SessionAttr(tty bool) *syscall.SysProcAttr {
	if tty {
		return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

// Run runs cmd as an exec session and waits for it. The caller sets
// cmd's Path, Args, Env and Dir, and may set SysProcAttr.Credential;
// Run sets its standard streams and the rest of SysProcAttr
// (SessionAttr). When the command exits, what it left in its
// process group is killed. It is killed at once, group and all, when ctx
// ends (Run returns ctx.Err()) or taskDone closes (an error wrapping
// drivers.ErrTaskNotRunning).
func Run(ctx context.Context, cmd *exec.Cmd, opts *drivers.ExecOptions, taskDone <-chan struct{}) (*drivers.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := Open(opts)
	if err != nil {
		return nil, fmt.Errorf("exec streams: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Files[0], s.Files[1], s.Files[2]
	attr := SessionAttr(opts.TTY)
	if cmd.SysProcAttr != nil {
		attr.Credential = cmd.SysProcAttr.Credential
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		s.CloseFiles()
		s.Close(0)
		return nil, fmt.Errorf("exec %s: %w", cmd.Path, err)
	}
	s.Start()
	pid := cmd.Process.Pid
	var (
		werr   error
		reaped bool
		exited = make(chan struct{})
	)
	go func() {
		defer close(exited)
		if !WaitExited(pid) { // cannot wait without reaping here
			werr, reaped = cmd.Wait(), true
		}
	}()
	var cause error
	select {
	case <-exited:
	case <-ctx.Done():
		cause = ctx.Err()
	case <-taskDone:
		cause = fmt.Errorf("exec: %w: the task ended while the command ran", drivers.ErrTaskNotRunning)
	}
	if cause != nil {
		killGroup(pid)
		<-exited
	}
	if !reaped {
		// The leader is a zombie, not reaped: its group ID still names
		// its group only. What it left there dies with it.
		killGroup(pid)
		werr = cmd.Wait()
	}
	s.Close(DrainGrace)
	if cause != nil {
		return nil, cause
	}
	return Result(cmd.ProcessState, werr)
}

func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// Result is the ExecResult of a reaped process.
func Result(ps *os.ProcessState, err error) (*drivers.ExecResult, error) {
	if ps == nil {
		return nil, fmt.Errorf("exec: wait: %w", err)
	}
	return &drivers.ExecResult{ExitCode: ExitCode(ps.Sys().(syscall.WaitStatus))}, nil
}

// ExitCode is a wait status as shells report it: the exit status, or
// 128+signal for a process killed by a signal.
func ExitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
