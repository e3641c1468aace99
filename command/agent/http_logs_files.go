package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"time"

	"github.com/droverhq/drover/drivers/logrotate"
)

// logReader reads a task's log across its rotated files (<base>.0,
// <base>.1, ...; package drivers/logrotate) as one stream: positions
// count bytes across the files that existed when it was opened.
type logReader struct {
	base  string // "" when the log is one file that does not rotate
	files []logFile
	total int64 // bytes in files

	f     *os.File // the file being read
	index int      // its index
}

type logFile struct {
	path  string
	index int
	size  int64
}

// openLog lists the log whose current file is path and opens its oldest
// file. When following, it waits for a task that has not started yet to
// create its log, unless the task is dead (a task that failed in setup
// never writes one).
func openLog(r *http.Request, path string, follow bool, dead func() bool) (*logReader, error) {
	lr := &logReader{}
	if base, _, ok := logrotate.Split(path); ok {
		lr.base = base
	}
	for {
		if err := lr.list(path); err != nil {
			return nil, err
		}
		if len(lr.files) > 0 {
			return lr, nil
		}
		if !follow || dead() {
			return nil, errorf(http.StatusNotFound, "no log at %s: the task has not started, or ended without writing one", path)
		}
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-time.After(logPollInterval):
		}
	}
}

// list records the log's files and their sizes.
func (lr *logReader) list(path string) error {
	paths := []string{path}
	if lr.base != "" {
		var err error
		if paths, err = logrotate.Files(lr.base); err != nil {
			return err
		}
	}
	lr.files, lr.total = nil, 0
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by a rotation meanwhile
		}
		if err != nil {
			return err
		}
		_, idx, _ := logrotate.Split(p)
		lr.files = append(lr.files, logFile{path: p, index: idx, size: fi.Size()})
		lr.total += fi.Size()
	}
	return nil
}

// seek opens the file holding stream position pos and seeks to it. A
// position past the end lands in the newest file, past its end.
func (lr *logReader) seek(pos int64) error {
	for i, lf := range lr.files {
		if pos >= lf.size && i < len(lr.files)-1 {
			pos -= lf.size
			continue
		}
		f, err := os.Open(lf.path)
		if err != nil {
			return err
		}
		if _, err := f.Seek(pos, io.SeekStart); err != nil {
			f.Close()
			return err
		}
		lr.f, lr.index = f, lf.index
		return nil
	}
	return fmt.Errorf("log %s has no files", lr.base)
}

// next moves to the file after the one being read once the log has
// rotated to it (the writer never returns to a file once it began the
// next). moved means "copy again at once": when the current file grew
// since the caller's copy, next stays on it so that it is drained first.
func (lr *logReader) next() (moved bool, err error) {
	if lr.base == "" {
		return false, nil
	}
	paths, err := logrotate.Files(lr.base)
	if err != nil {
		return false, err
	}
	for _, p := range paths {
		_, idx, _ := logrotate.Split(p)
		if idx <= lr.index {
			continue
		}
		if n, _ := lr.f.Seek(0, io.SeekCurrent); n < fileSize(lr.f) {
			return true, nil // rotated after our copy: drain the rest first
		}
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // already pruned: take the next
		}
		if err != nil {
			return false, err
		}
		lr.f.Close()
		lr.f, lr.index = f, idx
		return true, nil
	}
	return false, nil
}

func (lr *logReader) close() {
	if lr.f != nil {
		lr.f.Close()
	}
}

func fileSize(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}
