// Package hostexec runs exec sessions (drivers.Execer) for the drivers
// whose tasks are host processes, raw_exec and exec: the standard
// streams between an exec'd command and the caller (pipes, or a
// pseudo-terminal from github.com/creack/pty), and, for a command the
// driver starts itself, its start, kill and wait (Run); and what names a
// host process for good across agent restarts (ProcStart, BootID).
//
// It knows nothing of tasks or isolation: the driver decides where and
// how the command runs (its environment, dir, namespaces) and hands this
// package the command or just the files. It must not import a driver.
package hostexec

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/creack/pty"

	"github.com/droverhq/drover/drivers"
)

// eofChar is what a terminal's line discipline takes as end of input
// (VEOF, ^D by default); sent on Stdin's EOF with TTY.
const eofChar = 0x04

// Stdio is an exec session's standard streams: the command's ends
// (Files) and the goroutines that copy between the driver's ends and
// the caller's reader and writers.
//
// Use: Open; start the command with Files (or hand them to the process
// that starts it); Start; once the command has exited, Close.
type Stdio struct {
	// Files are the command's stdin, stdout and stderr: pipe ends (stdin
	// /dev/null without opts.Stdin), or the pty's terminal three times.
	Files [3]*os.File

	opts   *drivers.ExecOptions
	master *os.File // TTY: the pty's master, read and written here
	stdinW *os.File // no TTY: the stdin pipe's write end, nil without stdin
	outR   []*os.File

	output  sync.WaitGroup // the copiers into opts.Stdout and opts.Stderr
	ended   chan struct{}  // closed by Close: stops stdin and resize
	endOnce sync.Once
}

// Open makes the streams for opts. With TTY, a terminal size already
// waiting on opts.Resize is applied now, before the command starts.
func Open(opts *drivers.ExecOptions) (s *Stdio, err error) {
	s = &Stdio{opts: opts, ended: make(chan struct{})}
	defer func() {
		if err != nil {
			s.CloseFiles()
			s.closeOurs()
		}
	}()
	if opts.TTY {
		return s, s.openTTY()
	}
	if opts.Stdin == nil {
		if s.Files[0], err = os.Open(os.DevNull); err != nil {
			return s, err
		}
	} else if s.Files[0], s.stdinW, err = os.Pipe(); err != nil {
		return s, err
	}
	for i := 1; i <= 2; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			return s, err
		}
		s.Files[i] = w
		s.outR = append(s.outR, r)
	}
	return s, nil
}

func (s *Stdio) openTTY() error {
	master, tty, err := pty.Open()
	if err != nil {
		return err
	}
	s.Files = [3]*os.File{tty, tty, tty}
	// pty.Open leaves the master in blocking mode (its ioctls go through
	// Fd), where Close cannot interrupt a Read; a pollable copy can be.
	if s.master, err = pollable(master); err != nil {
		return err
	}
	s.outR = []*os.File{s.master}
	for {
		select {
		case size := <-s.opts.Resize:
			if err := setSize(s.master, size); err != nil {
				return err
			}
			continue
		default:
		}
		return nil
	}
}

// Start closes this process's copies of the command's ends (the command,
// or the process it was handed to, holds its own) and starts copying.
func (s *Stdio) Start() {
	s.CloseFiles()
	stdout, stderr := orDiscard(s.opts.Stdout), orDiscard(s.opts.Stderr)
	if s.opts.TTY {
		s.copyOut(stdout, s.master)
	} else {
		s.copyOut(stdout, s.outR[0])
		s.copyOut(stderr, s.outR[1])
	}
	switch {
	case s.opts.Stdin != nil:
		go s.copyIn()
	case s.opts.TTY:
		// No input: the terminal's end of input at once, as /dev/null
		// gives without one.
		_, _ = s.master.Write([]byte{eofChar})
	}
	if s.opts.Resize != nil {
		go s.resize()
	}
}

// CloseFiles closes this process's copies of the command's ends. Start
// does it; call it alone when the command could not start.
func (s *Stdio) CloseFiles() {
	for i, f := range s.Files {
		if f != nil && (i == 0 || f != s.Files[0]) {
			f.Close()
		}
	}
}

// Close waits up to grace for the command's output to reach the
// writers (EOF: every holder of its stdout and stderr closed them), then
// closes the driver's ends and waits for the copiers, so no writer is
// written to once it returns. Call it after the command has exited.
func (s *Stdio) Close(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		s.output.Wait()
		close(done)
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
	s.closeOurs()
	<-done
}

// closeOurs stops stdin and resize and closes the driver's ends, which
// ends any copier blocked on them.
func (s *Stdio) closeOurs() {
	s.endOnce.Do(func() { close(s.ended) })
	for _, f := range append([]*os.File{s.stdinW, s.master}, s.outR...) {
		if f != nil {
			f.Close()
		}
	}
}

func (s *Stdio) copyOut(w io.Writer, r *os.File) {
	s.output.Add(1)
	go func() {
		defer s.output.Done()
		// A pty master reads EIO once the terminal's last holder closed
		// it; that is its EOF.
		_, _ = io.Copy(w, r)
	}()
}

// copyIn feeds Stdin to the command until Stdin's EOF or Close. It ends
// at the first Read that returns after Close; what that Read got is
// dropped.
func (s *Stdio) copyIn() {
	w := s.stdinW
	if s.opts.TTY {
		w = s.master
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := s.opts.Stdin.Read(buf)
		select {
		case <-s.ended:
			return
		default:
		}
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if s.opts.TTY {
				_, _ = w.Write([]byte{eofChar})
			} else {
				w.Close()
			}
			return
		}
	}
}

// resize applies terminal sizes from opts.Resize until Close (without
// TTY it drops them, so the sender never blocks on a session that
// cannot use them).
func (s *Stdio) resize() {
	for {
		select {
		case <-s.ended:
			return
		case size := <-s.opts.Resize:
			if s.master != nil {
				_ = setSize(s.master, size)
			}
		}
	}
}

// setSize sets the terminal's size through the master without putting
// it back in blocking mode (pty.Setsize would, through Fd).
func setSize(master *os.File, size drivers.TerminalSize) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	ws := pty.Winsize{Rows: size.Height, Cols: size.Width}
	var ioctlErr error
	err = rc.Control(func(fd uintptr) { ioctlErr = ioctlWinsize(fd, &ws) })
	if err != nil {
		return err
	}
	return ioctlErr
}

func ioctlWinsize(fd uintptr, ws *pty.Winsize) error {
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(ws)))
	if errno != 0 {
		return errno
	}
	return nil
}

// pollable returns a non-blocking copy of f, served by the runtime's
// poller so that Close interrupts a blocked Read, and closes f.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	syscall.ForkLock.RLock()
	fd, err := syscall.Dup(int(f.Fd()))
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
