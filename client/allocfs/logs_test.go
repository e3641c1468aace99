package allocfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers/logrotate"
	"github.com/droverhq/drover/structs"
)

// alphabet is 36 bytes: in files of 10 it fills .0, .1, .2 and 6 of .3.
const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

func TestLogsRead(t *testing.T) {
	tests := []struct {
		name     string
		maxFiles int // of 10 bytes each
		opts     LogsOptions
		want     string
	}{
		{"from start", 10, LogsOptions{}, alphabet},
		{"start offset inside a middle file", 10, LogsOptions{Offset: 15}, alphabet[15:]},
		{"start offset on a file boundary", 10, LogsOptions{Offset: 20}, alphabet[20:]},
		{"start offset past the end", 10, LogsOptions{Offset: 500}, ""},
		{"from end", 10, LogsOptions{Origin: OriginEnd, Offset: 4}, alphabet[32:]},
		{"from end across files", 10, LogsOptions{Origin: OriginEnd, Offset: 13}, alphabet[23:]},
		{"from end, zero", 10, LogsOptions{Origin: OriginEnd}, ""},
		{"from end past the start", 10, LogsOptions{Origin: OriginEnd, Offset: 500}, alphabet},
		{"oldest files pruned", 2, LogsOptions{}, alphabet[20:]},
		{"pruned, offset counts from the oldest kept", 2, LogsOptions{Offset: 3}, alphabet[23:]},
		{"pruned, from end", 2, LogsOptions{Origin: OriginEnd, Offset: 10}, alphabet[26:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, dir := allocDir(t)
			w := openLog(t, dir, "web", logrotate.Options{MaxFiles: tt.maxFiles, MaxFileBytes: 10})
			writeLog(t, w, alphabet)
			c := newCollector()
			tt.opts.Task = "web"
			if err := fsys.Logs(t.Context(), tt.opts, nil, c.emit); err != nil {
				t.Fatal(err)
			}
			if got := c.data(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			checkFrames(t, c.snapshot(), tt.want, 10)
		})
	}
}

// checkFrames checks each frame against the log it came from: File is
// the file of the data and Offset its end in that file, for a log of
// files of fileBytes whose stream is alphabet, of which want is the tail.
func checkFrames(t *testing.T, frames []*structs.StreamFrame, want string, fileBytes int) {
	t.Helper()
	pos := len(alphabet) - len(want) // stream position of the next byte
	for i, fr := range frames {
		if len(fr.Data) == 0 || len(fr.Data) > MaxFrameBytes {
			t.Fatalf("frame %d: %d bytes of data", i, len(fr.Data))
		}
		end := pos + len(fr.Data)
		index := pos / fileBytes
		wantFile := fmt.Sprintf("alloc/logs/web.stdout.%d", index)
		wantOffset := int64(end - index*fileBytes)
		if fr.File != wantFile || fr.Offset != wantOffset {
			t.Errorf("frame %d (%q): File %q Offset %d, want %q %d", i, fr.Data, fr.File, fr.Offset, wantFile, wantOffset)
		}
		if (end-1)/fileBytes != index {
			t.Errorf("frame %d (%q) spans two files", i, fr.Data)
		}
		pos = end
	}
}

func TestLogsFrameSize(t *testing.T) {
	fsys, dir := allocDir(t)
	w := openLog(t, dir, "web", logrotate.Options{MaxFiles: 3, MaxFileBytes: 1 << 30})
	big := strings.Repeat("gpu0 step 12345 loss 0.25\n", 10_000) // 260 kB
	writeLog(t, w, big)
	c := newCollector()
	if err := fsys.Logs(t.Context(), LogsOptions{Task: "web"}, nil, c.emit); err != nil {
		t.Fatal(err)
	}
	if c.data() != big {
		t.Fatalf("got %d bytes, want %d", len(c.data()), len(big))
	}
	var off int64
	for i, fr := range c.snapshot() {
		off += int64(len(fr.Data))
		if len(fr.Data) > MaxFrameBytes || fr.Offset != off {
			t.Errorf("frame %d: %d bytes, Offset %d, want at most %d bytes and Offset %d", i, len(fr.Data), fr.Offset, MaxFrameBytes, off)
		}
	}
}

func TestLogsStderrAndPlainFile(t *testing.T) {
	fsys, dir := allocDir(t)
	write(t, filepath.Join(dir, LogsDir, "web.stderr.0"), "oops\n")
	write(t, filepath.Join(dir, LogsDir, "db.stdout"), "not rotated\n") // MaxFiles 0
	write(t, filepath.Join(dir, LogsDir, "web.stdout.x"), "not a log file\n")
	tests := []struct {
		opts     LogsOptions
		want     string
		wantFile string
	}{
		{LogsOptions{Task: "web", Stderr: true}, "oops\n", "alloc/logs/web.stderr.0"},
		{LogsOptions{Task: "db"}, "not rotated\n", "alloc/logs/db.stdout"},
	}
	for _, tt := range tests {
		t.Run(tt.wantFile, func(t *testing.T) {
			c := newCollector()
			if err := fsys.Logs(t.Context(), tt.opts, nil, c.emit); err != nil {
				t.Fatal(err)
			}
			frames := c.snapshot()
			if c.data() != tt.want || len(frames) != 1 || frames[0].File != tt.wantFile {
				t.Errorf("got %q in %d frames (%+v), want %q from %s", c.data(), len(frames), frames, tt.want, tt.wantFile)
			}
		})
	}
}

func TestLogsErrors(t *testing.T) {
	fsys, dir := allocDir(t)
	symlink(t, "/etc/passwd", filepath.Join(dir, LogsDir, "evil.stdout.0"))
	alive := func() bool { return false }
	isDead := func() bool { return true }
	tests := []struct {
		name string
		opts LogsOptions
		dead func() bool
		want error
	}{
		{"no task", LogsOptions{}, nil, structs.ErrInvalid},
		{"dot dot", LogsOptions{Task: ".."}, nil, structs.ErrInvalid},
		{"slash", LogsOptions{Task: "../web"}, nil, structs.ErrInvalid},
		{"backslash", LogsOptions{Task: `a\b`}, nil, structs.ErrInvalid},
		{"NUL", LogsOptions{Task: "web\x00"}, nil, structs.ErrInvalid},
		{"bad origin", LogsOptions{Task: "web", Origin: "middle"}, nil, structs.ErrInvalid},
		{"negative offset", LogsOptions{Task: "web", Offset: -1}, nil, structs.ErrInvalid},
		{"no log, not following", LogsOptions{Task: "web"}, alive, structs.ErrNotFound},
		{"no log, following a dead task", LogsOptions{Task: "web", Follow: true}, isDead, structs.ErrNotFound},
		{"log file is a link out", LogsOptions{Task: "evil"}, nil, structs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector()
			err := fsys.Logs(t.Context(), tt.opts, tt.dead, c.emit)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if len(c.snapshot()) != 0 {
				t.Errorf("sent %d frames", len(c.snapshot()))
			}
		})
	}
}

func TestLogsDirIsLinkOut(t *testing.T) {
	fsys, dir := allocDir(t)
	outside := filepath.Join(dir, "..", "..", "logs")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(outside, "web.stdout.0"), "outside\n")
	if err := os.Remove(filepath.Join(dir, LogsDir)); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(dir, LogsDir))
	err := fsys.Logs(t.Context(), LogsOptions{Task: "web"}, nil, newCollector().emit)
	if !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("got %v, want ErrInvalid", err)
	}
}

// TestLogsFollow follows a log through appends and rotations and ends
// once the task is dead and the log drained.
func TestLogsFollow(t *testing.T) {
	fsys, dir := allocDir(t)
	w := openLog(t, dir, "web", logrotate.Options{MaxFiles: 3, MaxFileBytes: 10})
	writeLog(t, w, alphabet[:4])
	c := newCollector()
	var dead deadFlag
	done := run(func() error {
		return fsys.Logs(t.Context(), LogsOptions{Task: "web", Follow: true}, dead.get, c.emit)
	})
	c.waitFor(t, "the first write", c.hasData(alphabet[:4]))
	writeLog(t, w, alphabet[4:8])
	c.waitFor(t, "an append", c.hasData(alphabet[:8]))
	writeLog(t, w, alphabet[8:25]) // rotates to .1 and .2
	c.waitFor(t, "the rotated data", c.hasData(alphabet[:25]))
	writeLog(t, w, alphabet[25:]) // written before the task dies: drained
	dead.set()
	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
	if got := c.data(); got != alphabet {
		t.Errorf("got %q, want %q", got, alphabet)
	}
	checkFrames(t, c.snapshot(), alphabet, 10)
}

// TestLogsFollowSkipsPruned: a follower that falls behind the pruning
// moves on to the oldest file left.
func TestLogsFollowSkipsPruned(t *testing.T) {
	fsys, dir := allocDir(t)
	w := openLog(t, dir, "web", logrotate.Options{MaxFiles: 2, MaxFileBytes: 10})
	writeLog(t, w, alphabet[:10])
	holding, block := make(chan struct{}), make(chan struct{})
	c := newCollector()
	var dead deadFlag
	first := true
	emit := func(fr *structs.StreamFrame) error {
		if first {
			first = false
			close(holding)
			<-block // hold the follower while the log rotates past it
		}
		return c.emit(fr)
	}
	done := run(func() error {
		return fsys.Logs(t.Context(), LogsOptions{Task: "web", Follow: true}, dead.get, emit)
	})
	<-holding
	writeLog(t, w, alphabet[10:]) // .1 .. .3; .0 and .1 pruned
	dead.set()
	close(block)
	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
	if want := alphabet[:10] + alphabet[20:]; c.data() != want {
		t.Errorf("got %q, want %q", c.data(), want)
	}
}

func TestLogsWaitsForLog(t *testing.T) {
	fsys, dir := allocDir(t)
	c := newCollector()
	var dead deadFlag
	started := make(chan struct{})
	calls := 0
	deadFn := func() bool {
		if calls++; calls == 2 {
			close(started) // Logs found no log and is waiting
		}
		return dead.get()
	}
	done := run(func() error {
		return fsys.Logs(t.Context(), LogsOptions{Task: "web", Follow: true}, deadFn, c.emit)
	})
	<-started
	w := openLog(t, dir, "web", logrotate.Options{MaxFiles: 3, MaxFileBytes: 10})
	writeLog(t, w, "ready\n")
	c.waitFor(t, "the new log", c.hasData("ready\n"))
	dead.set()
	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestLogsCancel(t *testing.T) {
	fsys, dir := allocDir(t)
	fsys.PollInterval = time.Hour // ending must not wait for a poll
	w := openLog(t, dir, "web", logrotate.Options{MaxFiles: 3, MaxFileBytes: 10})
	writeLog(t, w, "x")
	tests := []struct {
		name string
		task string
	}{
		{"following a log", "web"},
		{"waiting for a log", "api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			done := run(func() error {
				return fsys.Logs(ctx, LogsOptions{Task: tt.task, Follow: true}, nil, newCollector().emit)
			})
			cancel()
			if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
		})
	}
}

func TestLogsHeartbeat(t *testing.T) {
	fsys, dir := allocDir(t)
	fsys.HeartbeatInterval = 5 * time.Millisecond
	w := openLog(t, dir, "web", logrotate.Options{MaxFiles: 3, MaxFileBytes: 10})
	writeLog(t, w, "x")
	tests := []struct {
		name string
		task string
	}{
		{"idle log", "web"},
		{"waiting for a log", "api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			c := newCollector()
			done := run(func() error {
				return fsys.Logs(ctx, LogsOptions{Task: tt.task, Follow: true}, nil, c.emit)
			})
			c.waitFor(t, "two heartbeats", func(frames []*structs.StreamFrame) bool {
				n := 0
				for _, fr := range frames {
					if fr.IsHeartbeat() {
						n++
					}
				}
				return n >= 2
			})
			cancel()
			if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
		})
	}
}

func TestLogsEmitError(t *testing.T) {
	fsys, dir := allocDir(t)
	w := openLog(t, dir, "web", logrotate.Options{MaxFiles: 3, MaxFileBytes: 10})
	writeLog(t, w, alphabet)
	errGone := errors.New("peer gone")
	n := 0
	err := fsys.Logs(t.Context(), LogsOptions{Task: "web", Follow: true}, nil, func(*structs.StreamFrame) error {
		n++
		return errGone
	})
	if err != errGone || n != 1 {
		t.Errorf("got %v after %d frames, want %v after 1", err, n, errGone)
	}
}
