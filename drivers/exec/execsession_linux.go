package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
)

// killLimit bounds how long ExecTask waits for the init to report a
// killed command's exit.
const killLimit = 5 * time.Second

// ExecTask implements drivers.Execer. In an isolated task the command
// runs in the task's isolation, not next to it: the task's init starts
// it (execinit_linux.go), so it is in the task's PID and mount
// namespaces and its cgroup (the task's limits count it), as the task's
// user (the agent's), with the task's environment and dir; the command
// is looked up in the task's PATH as the task sees the filesystem. In a
// fallback task (isolation off) it runs like raw_exec's, as the task
// does. Either way it gets a process group of its own, which is killed
// when the command exits (its leftovers), when ctx ends and when the task
// ends.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts *drivers.ExecOptions) (*drivers.ExecResult, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	t, err := d.lookup(taskID)
	if err != nil {
		return nil, err
	}
	if t.hasEnded() {
		return nil, fmt.Errorf("exec in %s: %w", taskID, drivers.ErrTaskNotRunning)
	}
	if (t.isolated && t.ctl == nil) || (t.recovered && t.user == nil) {
		// No way to the init's exec server (a task re-attached without
		// its exec socket): running the command outside the task's
		// isolation is no answer.
		return nil, fmt.Errorf("exec in %s: exec sessions are not available in a task re-attached after an agent restart without its exec socket", taskID)
	}
	var res *drivers.ExecResult
	if t.ctl != nil {
		res, err = t.execInInit(ctx, opts)
	} else {
		res, err = t.execPlain(ctx, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("exec in %s: %w", taskID, err)
	}
	return res, nil
}

func (t *task) hasEnded() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// execPlain runs the command of a task without isolation from the
// agent, as the task itself runs.
func (t *task) execPlain(ctx context.Context, opts *drivers.ExecOptions) (*drivers.ExecResult, error) {
	path, err := resolveCommand(opts.Command[0], t.env, t.dir)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: opts.Command, Env: t.env, Dir: t.dir,
		SysProcAttr: &syscall.SysProcAttr{Credential: t.user.Credential()}}
	return hostexec.Run(ctx, cmd, opts, t.done)
}

// execInInit has the task's init run the command (see execinit_linux.go
// for the protocol).
func (t *task) execInInit(ctx context.Context, opts *drivers.ExecOptions) (*drivers.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stdio, err := hostexec.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("exec streams: %w", err)
	}
	conn, err := t.openSession(stdio.Files)
	if err != nil {
		stdio.CloseFiles()
		stdio.Close(0)
		return nil, err
	}
	defer conn.Close()
	stdio.Start()
	replies := readReplies(conn)
	if err := json.NewEncoder(conn).Encode(execRequest{Argv: opts.Command, Env: t.env, Dir: t.dir, TTY: opts.TTY}); err != nil {
		conn.Close()
	}
	res, err := t.awaitSession(ctx, conn, replies)
	stdio.Close(hostexec.DrainGrace)
	return res, err
}

// openSession hands the init a new session socket and the command's
// stdio, and returns the driver's end of the session.
func (t *task) openSession(stdio [3]*os.File) (*net.UnixConn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("exec session socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "exec-session"), os.NewFile(uintptr(fds[1]), "exec-session-init")
	defer ours.Close()
	defer theirs.Close()
	c, err := net.FileConn(ours)
	if err != nil {
		return nil, fmt.Errorf("exec session socket: %w", err)
	}
	conn := c.(*net.UnixConn)
	rights := syscall.UnixRights(int(theirs.Fd()), int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd()))
	if _, _, err := t.ctl.WriteMsgUnix([]byte{0}, rights, nil); err != nil {
		conn.Close()
		if t.hasEnded() || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("%w: its init is gone", drivers.ErrTaskNotRunning)
		}
		return nil, fmt.Errorf("reach the task's init: %w", err)
	}
	return conn, nil
}

// readReplies delivers the init's session lines; the channel closes
// when the session does. The init sends at most two lines.
func readReplies(conn *net.UnixConn) <-chan string {
	ch := make(chan string, 2)
	go func() {
		defer close(ch)
		in := bufio.NewReader(conn)
		for range 2 {
			line, err := in.ReadString('\n')
			if err != nil {
				return
			}
			ch <- strings.TrimSpace(line)
		}
	}()
	return ch
}

// awaitSession follows the session to its end: the command's exit, the
// task's, or ctx's (then the command is killed and ctx.Err returned).
func (t *task) awaitSession(ctx context.Context, conn *net.UnixConn, replies <-chan string) (*drivers.ExecResult, error) {
	var (
		cause   error
		ctxDone = ctx.Done()
		limit   <-chan time.Time
	)
	for {
		select {
		case line, ok := <-replies:
			if !ok {
				if cause != nil {
					return nil, cause
				}
				return nil, fmt.Errorf("%w: the task ended while the command ran", drivers.ErrTaskNotRunning)
			}
			kind, rest, _ := strings.Cut(line, " ")
			switch kind {
			case "started":
				continue
			case "exit":
				code, err := strconv.Atoi(rest)
				switch {
				case cause != nil:
					return nil, cause
				case err != nil:
					return nil, fmt.Errorf("task init: bad exit report %q", line)
				}
				return &drivers.ExecResult{ExitCode: code}, nil
			case "invalid":
				return nil, fmt.Errorf("%w: %s", drivers.ErrInvalidConfig, rest)
			case "ended":
				return nil, fmt.Errorf("%w: its command has exited", drivers.ErrTaskNotRunning)
			default:
				return nil, fmt.Errorf("task init: %s", rest)
			}
		case <-ctxDone:
			cause, ctxDone = ctx.Err(), nil
			_ = conn.CloseWrite() // asks the init for a kill
			limit = time.After(killLimit)
		case <-limit:
			return nil, cause
		}
	}
}
