package exec

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
)

// Exec sessions of an isolated task are started by the task's init,
// which is already in the task's PID and mount namespaces and cgroup and
// runs as the task's user: a command it starts is in all of them, with
// nothing to enter. (Entering them from the agent would need setns,
// which a multithreaded Go process cannot do for a mount namespace.)
//
//	driver ── control socket (init fd 5, SOCK_SEQPACKET) ──> init
//	  (or a connection to the init's listening socket, fd 7, for an
//	  agent that re-attached after a restart: execlisten_linux.go)
//	  one message per session: 1 byte + SCM_RIGHTS [session socket,
//	  stdin, stdout, stderr] (pipe ends, or a pty's terminal)
//	driver <── session socket (SOCK_STREAM) ──> init
//	  driver: one JSON execRequest line; closing its end (or shutting
//	  down its writes) asks for a kill
//	  init:   "started <pid>" then "exit <code>"; or one of
//	          "invalid <msg>", "ended", "error <msg>"
//
// The init kills an exec'd command's process group when the driver asks,
// when the command exits (what it left behind) and when the task's
// command exits (then it refuses new sessions, and the PID namespace
// takes every process with the init).

// initCtlFD is the init's end of the exec control socket.
const initCtlFD = 5

// execRequest is what the driver asks the init to run.
type execRequest struct {
	Argv []string
	Env  []string
	Dir  string
	TTY  bool
}

// execControl makes the control socket: the driver's end and the init's.
func execControl() (*net.UnixConn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("exec control socket: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "exec-control")
	defer ours.Close()
	conn, err := net.FileConn(ours)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("exec control socket: %w", err)
	}
	return conn.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "exec-control-init"), nil
}

// reaper reaps the init's children: the task's command, exec'd commands
// (whose exits go to their waiters) and orphans. It sees each exit
// before reaping it, so under mu the process group of a registered
// command is its own even if the command has exited.
type reaper struct {
	cred    *syscall.Credential // the task's user; nil: the init's own
	mu      sync.Mutex
	waiters map[int]chan syscall.WaitStatus // exec'd commands not yet reaped
	closed  bool                            // the task's command exited
}

func newReaper(cred *syscall.Credential) *reaper {
	return &reaper{cred: cred, waiters: map[int]chan syscall.WaitStatus{}}
}

// reapUntil reaps children until pid exits and returns its status. An
// exec'd command's leftovers in its group are killed as it is reaped.
func (r *reaper) reapUntil(pid int) syscall.WaitStatus {
	for {
		got, err := waitAny()
		if err != nil {
			// No children left without seeing pid: cannot happen, but
			// do not spin.
			return syscall.WaitStatus(127 << 8)
		}
		r.mu.Lock()
		ch, isExec := r.waiters[got]
		if isExec {
			killGroup(got)
			delete(r.waiters, got)
		}
		var ws syscall.WaitStatus
		_, werr := wait4(got, &ws)
		r.mu.Unlock()
		if werr != nil {
			continue // reaped by the runtime (a start that failed)
		}
		if isExec {
			ch <- ws
		}
		if got == pid {
			return ws
		}
	}
}

// start starts an exec'd command and registers it, under mu so that its
// exit cannot be reaped before it is known.
func (r *reaper) start(path string, req *execRequest, files []*os.File) (int, <-chan syscall.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, nil, errTaskEnded
	}
	attr := hostexec.SessionAttr(req.TTY)
	attr.Credential = r.cred
	proc, err := os.StartProcess(path, req.Argv, &os.ProcAttr{
		Dir: req.Dir, Env: req.Env, Files: files, Sys: attr,
	})
	if err != nil {
		return 0, nil, err
	}
	pid, ch := proc.Pid, make(chan syscall.WaitStatus, 1)
	r.waiters[pid] = ch
	_ = proc.Release() // reaped by reapUntil, not through proc
	return pid, ch, nil
}

// kill kills the group of the exec'd command pid unless it was reaped.
func (r *reaper) kill(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.waiters[pid]; ok {
		killGroup(pid)
	}
}

// close kills every exec'd command's group and refuses new ones; for
// when the task's command has exited.
func (r *reaper) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for pid := range r.waiters {
		killGroup(pid)
	}
}

var errTaskEnded = errors.New("the task's command has exited")

func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// startExecServer serves the control socket the driver passed as
// initCtlFD, if it did.
func startExecServer(r *reaper) {
	f := os.NewFile(initCtlFD, "exec-control")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return // no control socket: ExecTask fails on the driver's side
	}
	go serveExec(conn.(*net.UnixConn), r)
}

// serveExec takes sessions from the control socket until it closes.
func serveExec(ctl *net.UnixConn, r *reaper) {
	buf := make([]byte, 1)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	for {
		_, oobn, _, _, err := ctl.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		fds, err := unixRights(oob[:oobn])
		if err != nil || len(fds) != 4 {
			for _, fd := range fds {
				syscall.Close(fd)
			}
			continue
		}
		go serveSession(fds, r)
	}
}

func unixRights(oob []byte) ([]int, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := syscall.ParseUnixRights(&m)
		if err != nil {
			return fds, err
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// serveSession runs one exec'd command: fds are the session socket and
// the command's stdin, stdout and stderr.
func serveSession(fds []int, r *reaper) {
	files := make([]*os.File, 3)
	for i := range files {
		files[i] = os.NewFile(uintptr(fds[i+1]), "exec-stdio")
	}
	sock := os.NewFile(uintptr(fds[0]), "exec-session")
	conn, err := net.FileConn(sock)
	sock.Close()
	if err != nil {
		closeAll(files)
		return
	}
	defer conn.Close()
	in := bufio.NewReader(conn)
	pid, exited, err := startSession(in, r, files)
	closeAll(files) // the command holds its own copies
	if err != nil {
		fmt.Fprintln(conn, sessionError(err))
		return
	}
	fmt.Fprintf(conn, "started %d\n", pid)
	killAsked := make(chan struct{})
	go func() {
		// Anything from the driver, or its end closing, asks for a kill.
		_, _ = in.ReadByte()
		close(killAsked)
	}()
	var ws syscall.WaitStatus
	select {
	case ws = <-exited:
	case <-killAsked:
		r.kill(pid)
		ws = <-exited
	}
	fmt.Fprintf(conn, "exit %d\n", hostexec.ExitCode(ws))
}

// startSession reads the request and starts the command.
func startSession(in *bufio.Reader, r *reaper, files []*os.File) (int, <-chan syscall.WaitStatus, error) {
	line, err := in.ReadBytes('\n')
	if err != nil {
		return 0, nil, fmt.Errorf("read exec request: %w", err)
	}
	var req execRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return 0, nil, fmt.Errorf("exec request: %w", err)
	}
	if len(req.Argv) == 0 {
		return 0, nil, fmt.Errorf("%w: exec needs a command", drivers.ErrInvalidConfig)
	}
	// Resolved here, in the task's mount namespace: what the task sees.
	path, err := resolveCommand(req.Argv[0], req.Env, req.Dir)
	if err != nil {
		return 0, nil, err
	}
	return r.start(path, &req, files)
}

func sessionError(err error) string {
	switch {
	case errors.Is(err, drivers.ErrInvalidConfig):
		return "invalid " + oneLine(strings.TrimPrefix(err.Error(), drivers.ErrInvalidConfig.Error()+": "))
	case errors.Is(err, errTaskEnded):
		return "ended"
	default:
		return "error " + oneLine(err.Error())
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// siPIDOffset is where siginfo_t keeps si_pid: after three ints, at the
// union aligned for a pointer.
const siPIDOffset = (12 + unsafe.Sizeof(uintptr(0)) - 1) &^ (unsafe.Sizeof(uintptr(0)) - 1)

// waitAny blocks until a child has exited and returns its PID, without
// reaping it (waitid WNOWAIT).
func waitAny() (int, error) {
	const pAll = 0
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0,
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return int(*(*int32)(unsafe.Pointer(&info[siPIDOffset]))), nil
		case syscall.EINTR:
			continue
		default:
			return 0, errno
		}
	}
}

func wait4(pid int, ws *syscall.WaitStatus) (int, error) {
	for {
		got, err := syscall.Wait4(pid, ws, 0, nil)
		if err != syscall.EINTR {
			return got, err
		}
	}
}
