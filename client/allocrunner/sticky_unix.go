//go:build unix

package allocrunner

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openDirAt opens name in dir as a directory, not following a symlink.
func openDirAt(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), nil
}

// renameAt moves name from the open directory src into dst.
func renameAt(src *os.File, name string, dst *os.File) error {
	if err := unix.Renameat(int(src.Fd()), name, int(dst.Fd()), name); err != nil {
		return fmt.Errorf("move %s: %w", filepath.Join(src.Name(), name), err)
	}
	return nil
}
