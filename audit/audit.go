// Package audit is the agent's audit log: one JSON line per HTTP request
// that changed state or was denied, appended to a file that rotates by size
// and by age, with at most a fixed number of old files kept.
//
// The package owns the file: its directory (0700) and mode (0600), the line
// format (Entry through encoding/json, so control characters in a path
// cannot split or forge a line, and long fields are cut to a bound), the
// rotation and the pruning of old files. Each Write is one write(2) of one
// whole line under a lock: nothing is buffered in the process, so a crash
// loses no line that Write returned for. Lines are fsynced at rotation and
// at Close, not per line.
//
// It must not see secrets: callers pass a token's accessor ID (or
// "anonymous"), never its secret, and the URL path without its query
// string. It decides nothing about which requests to record, reads no
// global clock (New takes one) and logs nothing; it imports nothing from
// drover.
package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"
)

// Outcomes of a request, for Entry.Outcome.
const (
	OutcomeAllowed = "allowed"
	OutcomeDenied  = "denied"
	OutcomeError   = "error"
)

// Bounds on the fields of one entry, in bytes: a long field is cut (at a
// UTF-8 boundary) so that one request cannot write an unbounded line.
const (
	MaxPathBytes  = 4 << 10 // Entry.Path
	MaxErrorBytes = 4 << 10 // Entry.Error
	MaxShortBytes = 256     // every other string field
)

var (
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("audit: log closed")
	// ErrRotate wraps a failure to rotate or prune that Write recovered
	// from: the entry was still written, to the current file, and the
	// rotation is tried again on a later write. Any other error from
	// Write means the entry was not written.
	ErrRotate = errors.New("audit: rotate")
)

// Entry is one audit record, written as one JSON line.
type Entry struct {
	Time      time.Time `json:"time"`
	Accessor  string    `json:"accessor"` // token accessor ID or "anonymous"; NEVER the secret
	Remote    string    `json:"remote"`   // remote address
	Method    string    `json:"method"`   // HTTP method
	Path      string    `json:"path"`     // URL path (no query string: it may carry secrets)
	Namespace string    `json:"namespace,omitempty"`
	Status    int       `json:"status"`
	Outcome   string    `json:"outcome"` // OutcomeAllowed, OutcomeDenied or OutcomeError
	Error     string    `json:"error,omitempty"`
	RequestID string    `json:"request_id"`
}

// Log appends entries to the audit file. It is safe for concurrent use.
type Log struct {
	cfg    Config
	clock  func() time.Time
	rename func(oldpath, newpath string) error // os.Rename; a seam for tests

	mu          sync.Mutex
	f           *os.File  // nil after a failed reopen (retried) or Close
	closed      bool      // Close was called
	size        int64     // bytes in the current file
	torn        bool      // the last write ended mid-line
	opened      time.Time // when the current file was opened; its age counts from here
	lastArchive time.Time // timestamp of the newest archive this Log made
}

// New opens (creating if need be) the audit file at cfg.Path for
// appending. Zero fields of cfg take their defaults; clock nil means
// time.Now.
func New(cfg Config, clock func() time.Time) (*Log, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = time.Now
	}
	l := &Log{cfg: cfg, clock: clock, rename: os.Rename}
	if err := l.open(clock()); err != nil {
		return nil, err
	}
	return l, nil
}

// Write appends e as one JSON line, rotating first if the line would take
// the file past RotateBytes or the file is older than RotateDuration. A
// zero e.Time is set from the clock. An error wrapping ErrRotate means the
// line was written but the rotation failed; any other error means it was
// not written.
func (l *Log) Write(e Entry) error {
	if e.Time.IsZero() {
		e.Time = l.clock()
	}
	line, err := encode(e)
	if err != nil {
		return err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.f == nil {
		if err := l.open(l.clock()); err != nil {
			return err
		}
	}
	rotErr := l.maybeRotate(int64(len(line)))
	if l.f == nil { // the rotation could not reopen the file
		return fmt.Errorf("audit: entry not written: %s", rotErr)
	}
	mended := l.torn
	if mended {
		// The file ends mid-line (a failed write, a crash): end that
		// line so this one starts clean.
		line = append([]byte{'\n'}, line...)
	}
	n, err := l.f.Write(line)
	l.size += int64(n)
	switch {
	case n == len(line), mended && n == 1:
		l.torn = false
	case n > 0:
		l.torn = true
	}
	if err != nil {
		if rotErr != nil {
			return fmt.Errorf("audit: write %s: %w (and %s)", l.cfg.Path, err, rotErr)
		}
		return fmt.Errorf("audit: write %s: %w", l.cfg.Path, err)
	}
	return rotErr
}

// Close syncs and closes the file. Later writes return ErrClosed; a second
// Close returns nil.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.f == nil {
		return nil
	}
	err := closeFile(l.f)
	l.f = nil
	if err != nil {
		return fmt.Errorf("audit: close %s: %w", l.cfg.Path, err)
	}
	return nil
}

// open opens cfg.Path for appending, creating its directory (0700) and the
// file (0600). An existing file readable by others is tightened to 0600,
// and one that ends mid-line is marked torn.
func (l *Log) open(now time.Time) error {
	if err := os.MkdirAll(filepath.Dir(l.cfg.Path), 0o700); err != nil {
		return fmt.Errorf("audit: create directory: %w", err)
	}
	f, err := os.OpenFile(l.cfg.Path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: open: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().Perm()&0o077 != 0 {
		err = f.Chmod(0o600)
	}
	last := []byte{'\n'}
	if err == nil && fi.Size() > 0 {
		_, err = f.ReadAt(last, fi.Size()-1)
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("audit: open %s: %w", l.cfg.Path, err)
	}
	l.f, l.size, l.opened, l.torn = f, fi.Size(), now, last[0] != '\n'
	return nil
}

// encode is the line format: e as JSON with its strings bounded, its time
// in UTC, and a newline. encoding/json escapes control characters (and
// U+2028, U+2029) and replaces invalid UTF-8, so the result is always one
// line.
func encode(e Entry) ([]byte, error) {
	e.Time = e.Time.UTC()
	e.Path = truncate(e.Path, MaxPathBytes)
	e.Error = truncate(e.Error, MaxErrorBytes)
	for _, s := range []*string{&e.Accessor, &e.Remote, &e.Method, &e.Namespace, &e.Outcome, &e.RequestID} {
		*s = truncate(*s, MaxShortBytes)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("audit: encode entry: %w", err)
	}
	return append(b, '\n'), nil
}

// truncate cuts s to at most max bytes, backing off to the start of a rune
// so a valid UTF-8 string stays valid.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for j := 0; j < utf8.UTFMax-1 && i > 0 && !utf8.RuneStart(s[i]); j++ {
		i--
	}
	return s[:i]
}

func closeFile(f *os.File) error {
	return errors.Join(f.Sync(), f.Close())
}
