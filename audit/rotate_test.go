package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// lineLen is the length of the line that entry(path) encodes to.
func lineLen(t *testing.T, path string, at time.Time) int64 {
	t.Helper()
	e := entry(path)
	e.Time = at
	b, err := encode(e)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b))
}

// writePaths writes entry(p) for each path, failing t on an error.
func writePaths(t *testing.T, l *Log, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := l.Write(entry(p)); err != nil {
			t.Fatalf("Write %s: %v", p, err)
		}
	}
}

// filePaths reads each file's entries' paths.
func filePaths(t *testing.T, files []string) [][]string {
	t.Helper()
	var out [][]string
	for _, f := range files {
		var paths []string
		for _, e := range readEntries(t, f) {
			paths = append(paths, e.Path)
		}
		out = append(out, paths)
	}
	return out
}

func TestRotateBySize(t *testing.T) {
	clk := newFakeClock()
	n := lineLen(t, "/v1/job/0", clk.Now())
	tests := []struct {
		name  string
		bytes int64
		want  [][]string // archives oldest first, then the live file
	}{
		{"three lines fit exactly", 3 * n, [][]string{
			{"/v1/job/0", "/v1/job/1", "/v1/job/2"},
			{"/v1/job/3", "/v1/job/4"},
		}},
		{"one byte short of three", 3*n - 1, [][]string{
			{"/v1/job/0", "/v1/job/1"},
			{"/v1/job/2", "/v1/job/3"},
			{"/v1/job/4"},
		}},
		{"a line bigger than the limit is written alone", 1, [][]string{
			{"/v1/job/0"}, {"/v1/job/1"}, {"/v1/job/2"}, {"/v1/job/3"}, {"/v1/job/4"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLog(t, Config{RotateBytes: tt.bytes}, clk.Now)
			writePaths(t, l, "/v1/job/0", "/v1/job/1", "/v1/job/2", "/v1/job/3", "/v1/job/4")
			files := logFiles(t, filepath.Dir(l.cfg.Path))
			got := filePaths(t, files)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("files = %v, want %v", got, tt.want)
			}
			for _, f := range files {
				if fi, err := os.Stat(f); err != nil || (fi.Size() > tt.bytes && fi.Size() > n) {
					t.Errorf("%s: size %v (%v), want at most %d", f, fi.Size(), err, tt.bytes)
				}
			}
		})
	}
}

func TestRotateCountsExistingFile(t *testing.T) {
	clk := newFakeClock()
	n := lineLen(t, "/v1/job/0", clk.Now())
	path := filepath.Join(t.TempDir(), "audit.log")
	l := newLog(t, Config{Path: path, RotateBytes: 2 * n}, clk.Now)
	writePaths(t, l, "/v1/job/0")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = newLog(t, Config{Path: path, RotateBytes: 2 * n}, clk.Now)
	writePaths(t, l, "/v1/job/1", "/v1/job/2")
	got := filePaths(t, logFiles(t, filepath.Dir(path)))
	want := [][]string{{"/v1/job/0", "/v1/job/1"}, {"/v1/job/2"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files = %v, want %v", got, want)
	}
}

func TestRotateByAge(t *testing.T) {
	clk := newFakeClock()
	opened := clk.Now()
	l := newLog(t, Config{RotateDuration: time.Hour}, clk.Now)
	dir := filepath.Dir(l.cfg.Path)

	writePaths(t, l, "/v1/job/0")
	clk.Advance(time.Hour - time.Nanosecond)
	writePaths(t, l, "/v1/job/1")
	if got := len(logFiles(t, dir)); got != 1 {
		t.Fatalf("files before an hour = %d, want 1", got)
	}
	clk.Advance(time.Nanosecond)
	rotatedAt := clk.Now()
	writePaths(t, l, "/v1/job/2")
	clk.Advance(30 * time.Minute)
	writePaths(t, l, "/v1/job/3") // the new file's age counts from its rotation

	want := "audit-" + rotatedAt.UTC().Format("20060102T150405.000Z") + ".log"
	if want != "audit-20260907T090526.123Z.log" || rotatedAt.Sub(opened) != time.Hour {
		t.Fatalf("test clock: archive name %s", want)
	}
	files := logFiles(t, dir)
	if len(files) != 2 || filepath.Base(files[0]) != want {
		t.Fatalf("files = %v, want [%s audit.log]", files, want)
	}
	got := filePaths(t, files)
	if w := [][]string{{"/v1/job/0", "/v1/job/1"}, {"/v1/job/2", "/v1/job/3"}}; fmt.Sprint(got) != fmt.Sprint(w) {
		t.Errorf("files = %v, want %v", got, w)
	}
}

func TestRotateByAgeSkipsEmptyFile(t *testing.T) {
	clk := newFakeClock()
	l := newLog(t, Config{RotateDuration: time.Hour}, clk.Now)
	clk.Advance(2 * time.Hour)
	writePaths(t, l, "/v1/job/0") // no archive of the empty file; age restarts
	clk.Advance(59 * time.Minute)
	writePaths(t, l, "/v1/job/1")
	if files := logFiles(t, filepath.Dir(l.cfg.Path)); len(files) != 1 {
		t.Errorf("files = %v, want only the live file", files)
	}
}

func TestRotateNamesNeverCollide(t *testing.T) {
	clk := newFakeClock() // never advances: every rotation is in the same millisecond
	l := newLog(t, Config{RotateBytes: 1, RotateMaxFiles: 100}, clk.Now)
	dir := filepath.Dir(l.cfg.Path)
	taken := filepath.Join(dir, "audit-20260907T080526.125Z.log") // someone else's
	if err := os.WriteFile(taken, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	writePaths(t, l, "/v1/job/0", "/v1/job/1", "/v1/job/2", "/v1/job/3")
	var names []string
	for _, f := range logFiles(t, dir) {
		names = append(names, filepath.Base(f))
	}
	want := []string{
		"audit-20260907T080526.123Z.log",
		"audit-20260907T080526.124Z.log",
		"audit-20260907T080526.125Z.log",
		"audit-20260907T080526.126Z.log",
		"audit.log",
	}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("files = %v, want %v", names, want)
	}
	got := filePaths(t, logFiles(t, dir))
	if w := "[[/v1/job/0] [/v1/job/1] [] [/v1/job/2] [/v1/job/3]]"; fmt.Sprint(got) != w {
		t.Errorf("files = %v, want %v", got, w)
	}
}

func TestPruneKeepsNewest(t *testing.T) {
	clk := newFakeClock()
	l := newLog(t, Config{RotateBytes: 1, RotateMaxFiles: 2}, clk.Now)
	dir := filepath.Dir(l.cfg.Path)
	others := []string{"audit-notes.log", "audit-2026.log", "other-20260907T080526.123Z.log", "audit-20260907T080526.123Z.txt"}
	for _, name := range others {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		writePaths(t, l, fmt.Sprintf("/v1/job/%d", i))
		clk.Advance(time.Second)
	}
	var archives []string
	for _, f := range logFiles(t, dir) {
		if e := readEntries(t, f); len(e) > 0 && f != l.cfg.Path {
			archives = append(archives, e[0].Path)
		}
	}
	if w := "[/v1/job/3 /v1/job/4]"; fmt.Sprint(archives) != w {
		t.Errorf("archives hold %v, want %v", archives, w)
	}
	for _, name := range others {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v, want it left alone", name, err)
		}
	}
}

func TestRotateFailureStillWrites(t *testing.T) {
	clk := newFakeClock()
	l := newLog(t, Config{RotateBytes: 1}, clk.Now)
	dir := filepath.Dir(l.cfg.Path)
	writePaths(t, l, "/v1/job/0")
	errRename := errors.New("rename refused")
	l.rename = func(string, string) error { return errRename }
	err := l.Write(entry("/v1/job/1"))
	if !errors.Is(err, ErrRotate) || !errors.Is(err, errRename) {
		t.Fatalf("Write = %v, want ErrRotate wrapping the rename error", err)
	}
	l.rename = os.Rename
	writePaths(t, l, "/v1/job/2") // rotates now
	got := filePaths(t, logFiles(t, dir))
	if w := "[[/v1/job/0 /v1/job/1] [/v1/job/2]]"; fmt.Sprint(got) != w {
		t.Errorf("files = %v, want %v", got, w)
	}
}

func TestWriteReopensAfterFailedReopen(t *testing.T) {
	clk := newFakeClock()
	l := newLog(t, Config{RotateBytes: 1}, clk.Now)
	writePaths(t, l, "/v1/job/0")
	// The rename "succeeds" but leaves a directory where the log goes, so
	// the reopen fails and the entry cannot be written.
	l.rename = func(oldpath, newpath string) error {
		if err := os.Rename(oldpath, newpath); err != nil {
			return err
		}
		return os.Mkdir(oldpath, 0o700)
	}
	if err := l.Write(entry("/v1/job/1")); err == nil || errors.Is(err, ErrRotate) {
		t.Fatalf("Write = %v, want an error that is not ErrRotate (not written)", err)
	}
	if err := l.Write(entry("/v1/job/1")); err == nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrRotate) {
		t.Fatalf("Write with no file = %v, want the open error", err)
	}
	l.rename = os.Rename
	if err := os.Remove(l.cfg.Path); err != nil {
		t.Fatal(err)
	}
	writePaths(t, l, "/v1/job/2")
	got := filePaths(t, logFiles(t, filepath.Dir(l.cfg.Path)))
	if w := "[[/v1/job/0] [/v1/job/2]]"; fmt.Sprint(got) != w {
		t.Errorf("files = %v, want %v", got, w)
	}
}
