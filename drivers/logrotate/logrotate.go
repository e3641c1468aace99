// Package logrotate writes a task's output stream (stdout or stderr) to
// a bounded set of numbered files: <base>.0, <base>.1, ... The highest
// index is the current file; once it holds MaxFileBytes the writer moves
// to the next index and removes the oldest files beyond MaxFiles. Every
// file but the current one is exactly MaxFileBytes long, so the stream's
// position (Offset) is index*MaxFileBytes + the current file's size,
// even after old files are gone.
//
// A writer opened on a base that already has files continues in the
// highest one, so a process that restarts (or an agent re-attaching to a
// task) appends where the last one stopped. With rotation off
// (MaxFiles 0) the log is the single file <base> itself.
//
// The package also lists a log's files for readers (Files, Current,
// Split). It owns file names and sizes only: it must not know about
// tasks, drivers or allocations.
package logrotate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// MB is the unit of LogConfig.MaxFileSizeMB.
const MB = 1 << 20

// Options bound a rotated log.
type Options struct {
	// MaxFiles is how many files are kept; 0 turns rotation off.
	MaxFiles int
	// MaxFileBytes is the size at which the current file is closed and
	// the next one begun; it must be positive when MaxFiles is.
	MaxFileBytes int64
}

// Writer appends to a rotated log. It is safe for concurrent use; the
// bytes of one Write call are never interleaved with another's (a Write
// may span two files, in order).
type Writer struct {
	base string
	opts Options

	mu    sync.Mutex
	f     *os.File
	index int
	size  int64 // of the current file
}

// Open opens the log at base for appending, continuing in its highest
// existing file. Its directory must exist.
func Open(base string, opts Options) (*Writer, error) {
	if opts.MaxFiles < 0 || (opts.MaxFiles > 0 && opts.MaxFileBytes <= 0) {
		return nil, fmt.Errorf("logrotate %s: invalid options %+v", base, opts)
	}
	w := &Writer{base: base, opts: opts}
	path := base
	if opts.MaxFiles > 0 {
		files, err := Files(base)
		if err != nil {
			return nil, err
		}
		if n := len(files); n > 0 {
			_, w.index, _ = Split(files[n-1])
		}
		path = fileName(base, w.index)
	}
	if err := w.openCurrent(path); err != nil {
		return nil, err
	}
	w.prune()
	return w, nil
}

func (w *Writer) openCurrent(path string) error {
	f, err := openNoFollow(path)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open log: %w", err)
	}
	w.f, w.size = f, st.Size()
	return nil
}

// Write appends p, moving to new files as the current one fills.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, fs.ErrClosed
	}
	written := 0
	for len(p) > 0 {
		chunk := p
		if w.opts.MaxFiles > 0 {
			if w.size >= w.opts.MaxFileBytes {
				if err := w.rotate(); err != nil {
					return written, err
				}
			}
			if room := w.opts.MaxFileBytes - w.size; int64(len(chunk)) > room {
				chunk = chunk[:room]
			}
		}
		n, err := w.f.Write(chunk)
		written += n
		w.size += int64(n)
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// rotate closes the current file, opens the next and prunes.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close log: %w", err)
	}
	w.f = nil
	w.index++
	if err := w.openCurrent(fileName(w.base, w.index)); err != nil {
		return err
	}
	w.prune()
	return nil
}

// prune removes the files older than the last MaxFiles. A file it cannot
// remove is left for the next rotation.
func (w *Writer) prune() {
	if w.opts.MaxFiles <= 0 {
		return
	}
	files, err := Files(w.base)
	if err != nil {
		return
	}
	for _, f := range files {
		if _, i, _ := Split(f); i <= w.index-w.opts.MaxFiles {
			_ = os.Remove(f)
		}
	}
}

// Offset is the position in the stream: bytes written to the log since
// its first file, counting files already removed.
func (w *Writer) Offset() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(w.index)*w.opts.MaxFileBytes + w.size
}

// Close closes the current file. Later writes fail with fs.ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

func fileName(base string, index int) string { return base + "." + strconv.Itoa(index) }

// Split splits a log file's name into its base and index; ok is false
// when path does not end in ".<index>".
func Split(path string) (base string, index int, ok bool) {
	dot := strings.LastIndexByte(path, '.')
	if dot < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(path[dot+1:])
	if err != nil || n < 0 || path[dot+1:] != strconv.Itoa(n) {
		return "", 0, false
	}
	return path[:dot], n, true
}

// Files lists the existing files of the log at base, oldest (lowest
// index) first. A missing directory is no files.
func Files(base string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Dir(base))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list logs: %w", err)
	}
	prefix := filepath.Base(base) + "."
	type file struct {
		path  string
		index int
	}
	var files []file
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if _, i, ok := Split(e.Name()); ok && e.Name() == prefix+strconv.Itoa(i) {
			files = append(files, file{base + e.Name()[len(prefix)-1:], i})
		}
	}
	sort.Slice(files, func(a, b int) bool { return files[a].index < files[b].index })
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.path
	}
	return out, nil
}

// Current returns the log's current (highest) file, or <base>.0 when it
// has none yet.
func Current(base string) string {
	files, err := Files(base)
	if err != nil || len(files) == 0 {
		return fileName(base, 0)
	}
	return files[len(files)-1]
}
