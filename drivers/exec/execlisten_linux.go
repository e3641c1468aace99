package exec

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A second way into an isolated task's exec server, for an agent that
// re-attached to the task after a restart (the control socket pair died
// with the agent that started it):
//
//	driver ── connect (SOCK_SEQPACKET) ──> listening socket (init fd 7)
//	  each connection is one more control socket: same messages
//
// The driver binds the socket, as root, mode 0600, in the alloc dir
// (no task can reach it: the alloc dir itself is not in any task's
// root) or, when that path is too long for a socket address, in the
// host's temp dir; the init accepts only peers running as root.

// initListenFD is the init's fd of the listening exec socket.
const initListenFD = 7

// maxSocketPath is the longest path a socket address takes
// (sun_path holds 108 bytes with the NUL).
const maxSocketPath = 107

// stateExecSocket is the handle state key of the socket's path.
const stateExecSocket = "exec_socket"

// execListener is a bound, listening socket for the init.
type execListener struct {
	path string
	file *os.File // the listening fd, handed to the init
}

// newExecListener binds a listening socket in dir (or the temp dir).
func newExecListener(dir string) (*execListener, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	name := ".drover-exec-" + hex.EncodeToString(b[:]) + ".sock"
	path := filepath.Join(dir, name)
	if len(path) > maxSocketPath {
		// Too long for a socket address: in a dir of its own in the
		// temp dir, made 0700 by MkdirTemp, so that no other user can
		// bind the name should the socket file go.
		private, err := os.MkdirTemp("", execSocketDirPrefix)
		if err != nil {
			return nil, fmt.Errorf("exec socket: %w", err)
		}
		path = filepath.Join(private, name)
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		removeExecSocket(path)
		return nil, fmt.Errorf("exec socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		removeExecSocket(path)
		return nil, fmt.Errorf("exec socket: %w", err)
	}
	f, err := ln.File()
	if err != nil {
		removeExecSocket(path)
		return nil, fmt.Errorf("exec socket: %w", err)
	}
	return &execListener{path: path, file: f}, nil
}

// execSocketDirPrefix names the private temp dirs of exec sockets whose
// path in the alloc dir would be too long.
const execSocketDirPrefix = "drover-exec-"

// removeExecSocket removes an exec socket and, when it is in a private
// temp dir of its own, that dir.
func removeExecSocket(path string) {
	_ = os.Remove(path)
	dir := filepath.Dir(path)
	if filepath.Dir(dir) == filepath.Clean(os.TempDir()) && strings.HasPrefix(filepath.Base(dir), execSocketDirPrefix) {
		_ = os.Remove(dir) // only if empty
	}
}

// dialExec connects to a task init's listening exec socket.
func dialExec(path string) (*net.UnixConn, error) {
	return net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
}

// serveListener runs in the init: every root peer that connects gets
// its own exec server (serveExec) on the connection.
func serveListener(r *reaper) {
	f := os.NewFile(initListenFD, "exec-listen")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return // none: only the agent that started the task can exec
	}
	ln := l.(*net.UnixListener)
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			if !peerIsRoot(c) {
				c.Close()
				continue
			}
			go serveExec(c, r)
		}
	}()
}

// peerIsRoot reports whether the process at the other end runs as root.
func peerIsRoot(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return false
	}
	return cred.Uid == 0
}
