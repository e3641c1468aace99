package allocfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/structs"
)

// Defaults of FS's stream settings.
const (
	DefaultPollInterval      = 100 * time.Millisecond
	DefaultHeartbeatInterval = 10 * time.Second
	// MaxFrameBytes bounds the data of one frame (Nomad's frame size).
	MaxFrameBytes = 64 << 10
	// sniffBytes is how much of a file ContentType is guessed from.
	sniffBytes = 512
)

// FS is an allocation's directory, seen from inside: every path is
// relative to it and none reaches outside it. Its methods are safe for
// concurrent use; set the fields before the first call.
type FS struct {
	// PollInterval is how often a followed file or log is checked for
	// new data; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// HeartbeatInterval is how long a followed stream may go without a
	// frame before an empty one (a heartbeat) is sent, so that proxies
	// keep the connection; 0 means DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration

	root *os.Root
}

// Open opens the allocation directory dir. Close it when done.
func Open(dir string) (*FS, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("allocation directory %s: %w", dir, structs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("allocation directory: %w", err)
	}
	return &FS{root: root}, nil
}

// Close releases the directory.
func (f *FS) Close() error { return f.root.Close() }

// List lists the directory at path, in name order. Entries are
// described as they are (a symbolic link is a link, not its target).
func (f *FS) List(path string) ([]*structs.AllocFileInfo, error) {
	name, err := cleanPath(path)
	if err != nil {
		return nil, err
	}
	dir, err := openNoBlock(f.root, name)
	if err != nil {
		return nil, pathError("list", path, err)
	}
	defer dir.Close()
	st, err := dir.Stat()
	if err != nil {
		return nil, pathError("list", path, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("list %q: not a directory: %w", path, structs.ErrInvalid)
	}
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return nil, pathError("list", path, err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make([]*structs.AllocFileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the directory was read
		}
		if err != nil {
			return nil, pathError("list", path, err)
		}
		out = append(out, f.fileInfo(filepath.Join(name, e.Name()), fi))
	}
	return out, nil
}

// Stat describes the file or directory at path, following symbolic
// links that stay inside the directory.
func (f *FS) Stat(path string) (*structs.AllocFileInfo, error) {
	name, err := cleanPath(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.root.Stat(name)
	if err != nil {
		return nil, pathError("stat", path, err)
	}
	info := f.fileInfo(name, fi)
	if name == "." {
		info.Name = filepath.Base(f.root.Name()) // as Nomad: the allocation's ID
	}
	return info, nil
}

// ReadAt reads the file at path from offset: limit bytes at most, or to
// its end when limit <= 0 (Nomad's readat; cat is ReadAt(path, 0, 0)).
// The caller closes the reader.
func (f *FS) ReadAt(path string, offset, limit int64) (io.ReadCloser, error) {
	if offset < 0 {
		return nil, fmt.Errorf("read %q: negative offset %d: %w", path, offset, structs.ErrInvalid)
	}
	file, _, err := f.openFile("read", path)
	if err != nil {
		return nil, err
	}
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		file.Close()
		return nil, pathError("read", path, err)
	}
	if limit <= 0 {
		return file, nil
	}
	return readCloser{io.LimitReader(file, limit), file}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// openFile opens the regular file (not a directory) at path; name is
// its cleaned path.
func (f *FS) openFile(op, path string) (file *os.File, name string, err error) {
	name, err = cleanPath(path)
	if err != nil {
		return nil, "", err
	}
	file, err = openNoBlock(f.root, name)
	if err != nil {
		return nil, "", pathError(op, path, err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, "", pathError(op, path, err)
	}
	switch {
	case st.IsDir():
		file.Close()
		return nil, "", fmt.Errorf("%s %q: is a directory: %w", op, path, structs.ErrInvalid)
	case !st.Mode().IsRegular():
		// A FIFO would block a reader forever, a device node would read
		// the host's device as the agent: neither is served.
		file.Close()
		return nil, "", fmt.Errorf("%s %q: not a regular file (%s): %w", op, path, st.Mode().Type(), structs.ErrInvalid)
	}
	return file, name, nil
}

// openNoBlock opens name for reading without blocking on a FIFO and
// without making a terminal the agent's controlling one; callers check
// what they opened.
func openNoBlock(root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}

// fileInfo describes fi, found at name.
func (f *FS) fileInfo(name string, fi fs.FileInfo) *structs.AllocFileInfo {
	info := &structs.AllocFileInfo{
		Name:     fi.Name(),
		IsDir:    fi.IsDir(),
		Size:     fi.Size(),
		FileMode: fi.Mode().String(),
		ModTime:  fi.ModTime(),
	}
	switch {
	case fi.IsDir():
	case fi.Mode().IsRegular():
		info.ContentType = f.sniff(name)
	default:
		info.ContentType = "application/octet-stream"
	}
	return info
}

// sniff guesses a file's content type from its first bytes.
func (f *FS) sniff(name string) string {
	file, err := openNoBlock(f.root, name)
	if err != nil {
		return "application/octet-stream"
	}
	defer file.Close()
	if st, err := file.Stat(); err != nil || !st.Mode().IsRegular() {
		return "application/octet-stream" // swapped since it was listed
	}
	buf := make([]byte, sniffBytes)
	n, _ := io.ReadFull(file, buf)
	return http.DetectContentType(buf[:n])
}

// cleanPath turns a user's path into a name for the root: relative,
// clean, and lexically inside the directory. "", "/" and "." name the
// directory itself; a leading "/" is the allocation directory's root,
// not the host's (Nomad's paths look like "/alloc/logs"). Symbolic links
// are left to os.Root, which refuses those that lead outside.
func cleanPath(path string) (string, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("path %q: contains a NUL byte: %w", path, structs.ErrInvalid)
	}
	rel := strings.TrimLeft(path, "/")
	if rel == "" {
		return ".", nil
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("path %q: escapes the allocation directory: %w", path, structs.ErrInvalid)
	}
	return filepath.Clean(rel), nil
}

// pathError classifies an error of os.Root or of a file: missing is
// ErrNotFound; a link leading outside, a link loop or a name too long is
// ErrInvalid; anything else (permissions, I/O) is returned wrapped.
func pathError(op, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s %q: %w", op, path, structs.ErrNotFound)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s %q: too many symbolic links: %w", op, path, structs.ErrInvalid)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%s %q: name too long: %w", op, path, structs.ErrInvalid)
	}
	var errno syscall.Errno
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && !errors.As(pe.Err, &errno) {
		// os.Root's own refusal (its sentinel is unexported): the only
		// one a cleaned, non-empty name meets is a path that escapes.
		return fmt.Errorf("%s %q: escapes the allocation directory: %w", op, path, structs.ErrInvalid)
	}
	return fmt.Errorf("%s %q: %w", op, path, err)
}
