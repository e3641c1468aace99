package allocrunner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// moveDataEntries moves each entry of <from>/alloc/data into
// <to>/alloc/data and returns how many it moved. The previous
// allocation's tasks could write its alloc dir: "data" may have become a
// symlink (a container's "/etc" is the host's /etc here). So each
// directory on the way is opened without following a symlink
// (openNoFollow) and the entries are renamed relative to those open
// directories: nothing outside the two data dirs is read or moved.
func moveDataEntries(from, to string) (int, error) {
	src, err := openNoFollow(from, "alloc", "data")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := openNoFollow(to, "alloc", "data")
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	names, err := src.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", src.Name(), err)
	}
	moved := 0
	for _, name := range names {
		if err := renameAt(src, name, dst); err != nil {
			return moved, err
		}
		moved++
	}
	return moved, nil
}

// openNoFollow opens base/elems... as a directory, refusing a symlink
// at each of elems (base is the client's own dir).
func openNoFollow(base string, elems ...string) (*os.File, error) {
	dir, err := os.Open(base)
	if err != nil {
		return nil, err
	}
	for _, e := range elems {
		next, err := openDirAt(dir, e)
		_ = dir.Close()
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", filepath.Join(append([]string{base}, elems...)...), err)
		}
		dir = next
	}
	return dir, nil
}
