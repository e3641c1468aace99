//go:build unix

package logrotate

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openNoFollow opens path for appending, creating it, without following
// a symlink at either of its last two elements. The log dir lies in the
// allocation's shared dir, which tasks write (a container's root may
// plant "/alloc/logs/web.stdout.1" -> "/etc/passwd", a path the client
// reads as the host's): the client must neither append the task's
// output to such a target nor create a file in a dir a link leads to.
func openNoFollow(path string) (*os.File, error) {
	dir, err := unix.Open(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Dir(path), Err: err}
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, filepath.Base(path), unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
