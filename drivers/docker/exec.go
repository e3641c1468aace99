package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/droverhq/drover/drivers"
)

// Exec sessions (drivers.Execer) are Docker execs: the engine starts the
// command in the task's container (its namespaces, cgroup, filesystem,
// user and environment) and streams its stdio over a hijacked
// connection. The engine has no call to kill an exec; see killExec.

const (
	// execDrain bounds how long a session waits, once the command
	// ended, for the rest of its output.
	execDrain = 2 * time.Second
	// execSettle bounds how long a finished exec may take to show as
	// not running in the engine's inspect.
	execSettle = 2 * time.Second
	// stopGrace is how long the result of a command killed by a signal
	// waits to learn whether its container went down with it.
	stopGrace = time.Second
)

// eofChar is the terminal's end-of-input character (^D), sent on Stdin's
// EOF with TTY.
const eofChar = 0x04

// ExecTask implements drivers.Execer: the command runs as a Docker exec
// in the task's container, as the container's user, with its
// environment and working dir. When ctx ends, the command's processes
// are killed from this host (killExec): that needs the engine to run on
// this host and in its PID namespace, and otherwise ExecTask says that
// the command may still run. When the container stops, the engine kills
// the command with it. Unlike raw_exec and exec, processes the command
// leaves behind keep running in the container after it exits.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts *drivers.ExecOptions) (*drivers.ExecResult, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	t, err := d.lookup(taskID)
	if err != nil {
		return nil, err
	}
	if t.exited() {
		return nil, fmt.Errorf("exec in %s: %w", taskID, drivers.ErrTaskNotRunning)
	}
	res, err := t.exec(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("exec in %s: %w", taskID, err)
	}
	return res, nil
}

// exec runs one session.
func (t *task) exec(ctx context.Context, opts *drivers.ExecOptions) (*drivers.ExecResult, error) {
	size := client.ConsoleSize{}
	if opts.TTY {
		size = initialSize(opts.Resize)
	}
	created, err := t.api.ExecCreate(ctx, t.containerID, client.ExecCreateOptions{
		TTY: opts.TTY, ConsoleSize: size, Cmd: opts.Command,
		AttachStdin: opts.Stdin != nil || opts.TTY, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, t.notRunning(fmt.Errorf("create exec: %w", err))
	}
	att, err := t.api.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: opts.TTY, ConsoleSize: size})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, t.notRunning(fmt.Errorf("start exec: %w", err))
	}
	life, end := context.WithCancel(context.Background())
	s := &execSession{task: t, id: created.ID, opts: opts, att: att, life: life, end: end, size: size}
	return s.run(ctx)
}

// notRunning turns an engine error that says the container is not
// running (or gone) into ErrTaskNotRunning.
func (t *task) notRunning(err error) error {
	if cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err) || t.exited() {
		return fmt.Errorf("%w: %v", drivers.ErrTaskNotRunning, err)
	}
	return err
}

// initialSize takes a size already waiting on resize, the terminal's
// first size.
func initialSize(resize <-chan drivers.TerminalSize) client.ConsoleSize {
	var size client.ConsoleSize
	for {
		select {
		case s := <-resize:
			size = client.ConsoleSize{Height: uint(s.Height), Width: uint(s.Width)}
			continue
		default:
		}
		return size
	}
}

// execSession is one running exec. Its goroutines: output (copies the
// stream to the caller's writers), stdin (feeds the caller's reader; ends
// at its first Read after the session) and resize. run waits for output
// and resize before it returns.
type execSession struct {
	task *task
	id   string
	opts *drivers.ExecOptions
	att  client.ExecAttachResult
	size client.ConsoleSize // the initial terminal size, zero for none

	life    context.Context // ends with the session
	end     context.CancelFunc
	helpers sync.WaitGroup
}

func (s *execSession) run(ctx context.Context) (*drivers.ExecResult, error) {
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		s.copyOut()
	}()
	switch {
	case s.opts.Stdin != nil:
		go s.copyIn()
	case s.opts.TTY:
		// No input: the terminal's end of input at once.
		_, _ = s.att.Conn.Write([]byte{eofChar})
	}
	if s.opts.Resize != nil {
		s.helpers.Add(1)
		go s.resize()
	}
	var cause error
	select {
	case <-outDone:
	case <-ctx.Done():
		cause = ctx.Err()
		if err := s.kill(); err != nil {
			s.task.logger.Warn("exec not killed", "exec_id", s.id, "error", err)
			cause = fmt.Errorf("%w (the command may still run: %v)", cause, err)
		}
	case <-s.task.done:
		cause = fmt.Errorf("%w: the task ended while the command ran", drivers.ErrTaskNotRunning)
	}
	if cause != nil {
		select {
		case <-outDone:
		case <-time.After(execDrain):
		}
	}
	s.end()
	s.att.Close()
	<-outDone
	s.helpers.Wait()
	if cause != nil {
		return nil, cause
	}
	return s.result()
}

func (s *execSession) copyOut() {
	stdout, stderr := s.opts.Stdout, s.opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if s.opts.TTY {
		_, _ = io.Copy(stdout, s.att.Reader)
		return
	}
	_, _ = stdcopy.StdCopy(stdout, stderr, s.att.Reader)
}

// copyIn feeds Stdin to the exec until Stdin's EOF (then it closes the
// exec's stdin, after ^D with TTY) or the session's end.
func (s *execSession) copyIn() {
	buf := make([]byte, 32<<10)
	for {
		n, err := s.opts.Stdin.Read(buf)
		if s.life.Err() != nil {
			return
		}
		if n > 0 {
			if _, werr := s.att.Conn.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if s.opts.TTY {
				// Closing the write side would end a TTY exec's
				// stream in the engine, output and all.
				_, _ = s.att.Conn.Write([]byte{eofChar})
				return
			}
			_ = s.att.CloseWrite()
			return
		}
	}
}

// resize passes terminal sizes to the engine until the session ends
// (without TTY it drops them). Engines before API 1.42 ignore the size
// given at create and start, so the initial size is set here too.
func (s *execSession) resize() {
	defer s.helpers.Done()
	if s.size.Height != 0 || s.size.Width != 0 {
		s.initialResize()
	}
	for {
		select {
		case <-s.life.Done():
			return
		case size := <-s.opts.Resize:
			if !s.opts.TTY {
				continue
			}
			_, err := s.task.api.ExecResize(s.life, s.id, client.ExecResizeOptions{Height: uint(size.Height), Width: uint(size.Width)})
			if err != nil && s.life.Err() == nil {
				s.task.logger.Debug("exec resize", "exec_id", s.id, "error", err)
			}
		}
	}
}

// initialResize sets the initial size, retrying while the engine may
// not have started the exec's process yet (as the docker CLI does).
func (s *execSession) initialResize() {
	for i := 1; i <= 10; i++ {
		_, err := s.task.api.ExecResize(s.life, s.id, client.ExecResizeOptions{Height: s.size.Height, Width: s.size.Width})
		if err == nil || s.life.Err() != nil {
			return
		}
		select {
		case <-s.life.Done():
			return
		case <-time.After(time.Duration(i) * 10 * time.Millisecond):
		}
	}
}

// result reads the exec's exit code once its stream ended. A command
// killed by a signal as the container stopped is the task ending, not
// the command's result.
func (s *execSession) result() (*drivers.ExecResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	deadline := time.Now().Add(execSettle)
	for {
		info, err := s.task.api.ExecInspect(ctx, s.id, client.ExecInspectOptions{})
		if err != nil {
			return nil, s.task.notRunning(fmt.Errorf("inspect exec: %w", err))
		}
		if !info.Running {
			if info.ExitCode > 128 && s.task.stopsWithin(stopGrace) {
				return nil, fmt.Errorf("%w: the task ended while the command ran", drivers.ErrTaskNotRunning)
			}
			return &drivers.ExecResult{ExitCode: info.ExitCode}, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("exec %s: output ended but the engine still reports it running", shortID(s.id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopsWithin reports whether the container is seen stopped within
// grace.
func (t *task) stopsWithin(grace time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for {
		if t.exited() {
			return true
		}
		info, err := t.api.ContainerInspect(ctx, t.containerID, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) || (err == nil && info.Container.State != nil && !info.Container.State.Running) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kill SIGKILLs the exec's process and its descendants. The engine has
// no API for it, so it is done from this host, by the PID the engine
// reports, after checking that the process is in the task's container
// (its /proc/<pid>/cgroup names the container), which fails when the
// engine runs elsewhere or in another PID namespace. It keeps at it
// until the engine reports the exec ended and nothing of it is left: on
// a loaded host the engine may not report the PID yet when the caller
// gives up (a kill that found nothing then left the command running).
func (s *execSession) kill() error {
	deadline := time.Now().Add(apiTimeout)
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		info, err := s.task.api.ExecInspect(ctx, s.id, client.ExecInspectOptions{})
		cancel()
		if err != nil {
			return fmt.Errorf("inspect exec: %w", err)
		}
		if info.Running && info.PID > 0 && !inContainer(info.PID, s.task.containerID) {
			return fmt.Errorf("exec process %d is not visible in the container's cgroup from this host", info.PID)
		}
		killed := 0
		if info.PID > 0 {
			killed = s.killTree(info.PID)
		}
		if !info.Running && info.PID > 0 && killed == 0 {
			return nil // ended, and nothing it started is left
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("exec %s still running %v after SIGKILL (engine PID %d)", s.id, apiTimeout, info.PID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killTree SIGKILLs pid and the processes it started that are in the
// task's container, and returns how many it signalled.
func (s *execSession) killTree(root int) int {
	n := 0
	for _, pid := range processTree(root) {
		if st, ok := readStat(fmt.Sprintf("/proc/%d/stat", pid)); !ok || st.state == 'Z' || st.state == 'X' {
			continue // gone, or dead and waiting for its parent
		}
		if inContainer(pid, s.task.containerID) && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// inContainer reports whether /proc/<pid>/cgroup names the container.
func inContainer(pid int, containerID string) bool {
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && strings.Contains(string(cg), containerID)
}

// processTree lists root and the processes it started: its descendants
// and the members of its process group and session (which stay members
// when an exit re-parents them).
func processTree(root int) []int {
	children := map[int][]int{}
	tree := []int{root}
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		st, ok := readStat(p)
		if !ok || st.pid == root {
			continue
		}
		children[st.ppid] = append(children[st.ppid], st.pid)
		if st.pgrp == root || st.session == root {
			tree = append(tree, st.pid)
		}
	}
	seen := map[int]bool{}
	for i := 0; i < len(tree); i++ {
		if seen[tree[i]] {
			continue
		}
		seen[tree[i]] = true
		tree = append(tree, children[tree[i]]...)
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	return out
}

// procStat is what processTree reads from /proc/<pid>/stat.
type procStat struct {
	pid, ppid, pgrp, session int
	state                    byte
}

func readStat(path string) (procStat, bool) {
	f, err := os.Open(path)
	if err != nil {
		return procStat{}, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp session ...; comm may hold spaces and
	// parentheses.
	lp, rp := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if lp < 0 || rp < lp {
		return procStat{}, false
	}
	fields := strings.Fields(line[rp+1:])
	if len(fields) < 4 {
		return procStat{}, false
	}
	var st procStat
	st.state = fields[0][0]
	var errs [4]error
	st.pid, errs[0] = strconv.Atoi(strings.TrimSpace(line[:lp]))
	st.ppid, errs[1] = strconv.Atoi(fields[1])
	st.pgrp, errs[2] = strconv.Atoi(fields[2])
	st.session, errs[3] = strconv.Atoi(fields[3])
	return st, errors.Join(errs[:]...) == nil
}
