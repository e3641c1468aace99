package allocfs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/droverhq/drover/drivers/logrotate"
	"github.com/droverhq/drover/structs"
)

// LogsDir is where tasks' logs live, relative to the allocation
// directory: <task>.stdout.N and <task>.stderr.N (package
// drivers/logrotate).
const LogsDir = "alloc/logs"

// LogsOptions say which log to read and from where.
type LogsOptions struct {
	Task   string
	Stderr bool
	// Origin is OriginStart (the default when empty) or OriginEnd.
	Origin string
	// Offset counts bytes from Origin across the log's files that exist
	// when the read begins, as one stream; an offset past the other end
	// starts there.
	Offset int64
	// Follow keeps the stream open for data written later, until the
	// task is dead and its log drained, or ctx ends.
	Follow bool
}

// Logs sends a task's log as frames, reading its rotated files oldest
// first as one stream. Each frame's File is the file its data came from
// (LogsDir/<task>.stdout.N) and Offset the position in that file after
// the data, so a reader sees File change when the log moves on to its
// next file.
//
// When following, Logs waits for a log that does not exist yet, polls
// for new data and new files, and sends heartbeats while idle; it ends
// once dead reports true (dead may be nil: never) and everything written
// before that is sent. Without Follow, or when the task is dead, a
// missing log is ErrNotFound. It returns nil when the stream is done,
// ctx's error when ctx ended first, and emit's error as is.
func (f *FS) Logs(ctx context.Context, opts LogsOptions, dead func() bool, emit Emit) error {
	if err := checkTask(opts.Task); err != nil {
		return err
	}
	if err := checkOffset(opts.Origin, opts.Offset); err != nil {
		return fmt.Errorf("logs of task %q: %w", opts.Task, err)
	}
	if dead == nil {
		dead = func() bool { return false }
	}
	kind := "stdout"
	if opts.Stderr {
		kind = "stderr"
	}
	c := &logCursor{root: f.root, base: opts.Task + "." + kind}
	s := f.newStreamer(emit)
	defer s.stop()
	files, err := c.await(ctx, s, opts.Follow, dead)
	if err != nil {
		return err
	}
	if err := c.seek(files, startOffset(opts.Origin, opts.Offset, totalSize(files))); err != nil {
		return err
	}
	defer c.close()
	for {
		// Sampled before the copy: what a dead task wrote is all there
		// by now, so the copy that follows drains it.
		done := !opts.Follow || dead()
		if err := s.copy(ctx, c.f, c.file(), &c.off); err != nil {
			return err
		}
		moved, err := c.next()
		if err != nil {
			return err
		}
		if moved {
			continue
		}
		if done {
			return nil
		}
		if err := s.idle(ctx); err != nil {
			return err
		}
	}
}

// checkTask refuses task names that are not one path element.
func checkTask(task string) error {
	switch {
	case task == "":
		return fmt.Errorf("logs: task name is required: %w", structs.ErrInvalid)
	case task == "." || task == "..", strings.ContainsAny(task, "/\\\x00"):
		return fmt.Errorf("logs: task name %q is not a name: %w", task, structs.ErrInvalid)
	}
	return nil
}

// logCursor reads a log's files in turn: <base>.0, <base>.1, ... in
// LogsDir (or <base> alone when the log does not rotate), all through
// the root.
type logCursor struct {
	root *os.Root
	base string // "<task>.stdout"

	f     *os.File // the file being read
	name  string   // its name in LogsDir
	index int      // its index; -1 for a log that does not rotate
	off   int64    // the offset of f
}

type logFile struct {
	name  string
	index int
	size  int64
}

func totalSize(files []logFile) int64 {
	var n int64
	for _, lf := range files {
		n += lf.size
	}
	return n
}

// await lists the log's files. When there are none yet and the caller
// follows a task that is not dead, it waits for them (a task that has
// not started has no log; one that failed in setup never writes one).
func (c *logCursor) await(ctx context.Context, s *streamer, follow bool, dead func() bool) ([]logFile, error) {
	for {
		isDead := dead() // before listing: a log written before death is seen
		files, err := c.list()
		if err != nil || len(files) > 0 {
			return files, err
		}
		if !follow || isDead {
			return nil, fmt.Errorf("log %s: the task has not started, or ended without writing one: %w",
				path.Join(LogsDir, c.base), structs.ErrNotFound)
		}
		if err := s.idle(ctx); err != nil {
			return nil, err
		}
	}
}

// list returns the log's regular files, oldest first, with their sizes.
// A missing LogsDir is no files.
func (c *logCursor) list() ([]logFile, error) {
	dir, err := openNoBlock(c.root, LogsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, pathError("logs", LogsDir, err)
	}
	defer dir.Close()
	entries, err := dir.ReadDir(-1) // sorted by name, not by index
	if err != nil {
		return nil, pathError("logs", LogsDir, err)
	}
	var files []logFile
	var plain *logFile
	for _, e := range entries {
		index, ok := c.indexOf(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed by a rotation meanwhile
		}
		lf := logFile{name: e.Name(), index: index, size: fi.Size()}
		if index < 0 {
			plain = &lf
			continue
		}
		files = append(files, lf)
	}
	if len(files) == 0 && plain != nil {
		return []logFile{*plain}, nil
	}
	slices.SortFunc(files, func(a, b logFile) int { return cmp.Compare(a.index, b.index) })
	return files, nil
}

// indexOf returns the index of a file of the log named name: -1 for the
// log's base itself (a log that does not rotate).
func (c *logCursor) indexOf(name string) (int, bool) {
	if name == c.base {
		return -1, true
	}
	base, index, ok := logrotate.Split(name)
	if !ok || base != c.base || name != base+"."+strconv.Itoa(index) {
		return 0, false
	}
	return index, true
}

// seek opens the file holding stream position pos (counted across
// files, oldest first) and seeks to it; pos is at most the files' total.
func (c *logCursor) seek(files []logFile, pos int64) error {
	for i, lf := range files {
		if pos >= lf.size && i < len(files)-1 {
			pos -= lf.size
			continue
		}
		if err := c.open(lf); err != nil {
			if errors.Is(err, structs.ErrNotFound) && i < len(files)-1 {
				pos = 0 // pruned since listed: start the next one
				continue
			}
			return err
		}
		if _, err := c.f.Seek(min(pos, lf.size), io.SeekStart); err != nil {
			return pathError("logs", c.file(), err)
		}
		c.off = min(pos, lf.size)
		return nil
	}
	return fmt.Errorf("log %s: its files were removed while opening: %w", path.Join(LogsDir, c.base), structs.ErrNotFound)
}

// open makes lf the file being read, from its start.
func (c *logCursor) open(lf logFile) error {
	f, err := openNoBlock(c.root, path.Join(LogsDir, lf.name))
	if err != nil {
		return pathError("logs", path.Join(LogsDir, lf.name), err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("log %s: not a regular file: %w", path.Join(LogsDir, lf.name), structs.ErrInvalid)
	}
	c.close()
	c.f, c.name, c.index, c.off = f, lf.name, lf.index, 0
	return nil
}

// next moves to the log's next file once the writer has begun it (it
// never returns to a file after that). moved means "copy again": when
// the current file grew since the last copy, next stays on it so that
// it is drained first. Files pruned before they could be read are
// skipped.
func (c *logCursor) next() (moved bool, err error) {
	if c.index < 0 {
		return false, nil
	}
	files, err := c.list()
	if err != nil {
		return false, err
	}
	for _, lf := range files {
		if lf.index <= c.index {
			continue
		}
		if st, err := c.f.Stat(); err == nil && st.Size() > c.off {
			return true, nil // written before the rotation: drain it first
		}
		err := c.open(lf)
		if errors.Is(err, structs.ErrNotFound) {
			continue
		}
		return err == nil, err
	}
	return false, nil
}

// file is the path of the file being read, relative to the allocation
// directory.
func (c *logCursor) file() string { return path.Join(LogsDir, c.name) }

func (c *logCursor) close() {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
}
