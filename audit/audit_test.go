package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeClock is a settable clock for rotation by age.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 9, 7, 8, 5, 26, 123_456_789, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newLog opens a log in a fresh directory; it is closed at the end of t.
func newLog(t *testing.T, cfg Config, clock func() time.Time) *Log {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "audit", "audit.log")
	}
	l, err := New(cfg, clock)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// readEntries decodes a file that must hold only whole JSON lines.
func readEntries(t *testing.T, path string) []Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("%s: does not end in a newline", path)
	}
	var out []Entry
	for i, line := range bytes.Split(b[:len(b)-1], []byte("\n")) {
		var e Entry
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("%s line %d %q: %v", path, i+1, line, err)
		}
		out = append(out, e)
	}
	return out
}

func entry(path string) Entry {
	return Entry{
		Accessor:  "9d1f5c7e-0000-4000-8000-000000000001",
		Remote:    "10.0.0.7:51234",
		Method:    "PUT",
		Path:      path,
		Status:    200,
		Outcome:   OutcomeAllowed,
		RequestID: "req-1",
	}
}

func TestWriteOneJSONLinePerEntry(t *testing.T) {
	tests := []struct {
		name, path string
	}{
		{"plain", "/v1/jobs"},
		{"newline", "/v1/job/a\n{\"forged\":true}"},
		{"carriage return and tab", "/v1/job/a\r\t b"},
		{"nul and escape", "/v1/job/\x00\x1b[31m"},
		{"line separators", "/v1/job/\u2028\u2029"},
		{"html", "/v1/job/<script>&"},
		{"quotes and backslash", `/v1/job/"\`},
		{"unicode", "/v1/job/ジョブ"},
	}
	clk := newFakeClock()
	l := newLog(t, Config{}, clk.Now)
	for _, tt := range tests {
		if err := l.Write(entry(tt.path)); err != nil {
			t.Fatalf("Write %s: %v", tt.name, err)
		}
	}
	got := readEntries(t, l.cfg.Path)
	if len(got) != len(tests) {
		t.Fatalf("lines = %d, want %d", len(got), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := entry(tt.path)
			want.Time = clk.Now()
			if !got[i].Time.Equal(want.Time) {
				t.Errorf("time = %v, want %v", got[i].Time, want.Time)
			}
			got[i].Time = want.Time
			if got[i] != want {
				t.Errorf("entry = %+v, want %+v", got[i], want)
			}
		})
	}
}

func TestWriteKeepsTimeInUTC(t *testing.T) {
	l := newLog(t, Config{}, nil)
	e := entry("/v1/jobs")
	e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	if err := l.Write(e); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"time":"2026-01-02T02:04:05Z"`; !bytes.Contains(b, []byte(want)) {
		t.Errorf("line = %s, want it to hold %s", b, want)
	}
}

func TestEncodeBoundsFields(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes; 4096 falls mid-rune
	e := entry("/v1/job/" + long)
	e.Error = long
	e.RequestID = long
	e.Namespace = long
	line, err := encode(e)
	if err != nil {
		t.Fatal(err)
	}
	var got Entry
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		field, got string
		max        int
	}{
		{"path", got.Path, MaxPathBytes},
		{"error", got.Error, MaxErrorBytes},
		{"request_id", got.RequestID, MaxShortBytes},
		{"namespace", got.Namespace, MaxShortBytes},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			if len(tt.got) > tt.max || len(tt.got) < tt.max-utf8.UTFMax {
				t.Errorf("len = %d, want at most %d and near it", len(tt.got), tt.max)
			}
			if !utf8.ValidString(tt.got) || strings.ContainsRune(tt.got, utf8.RuneError) {
				t.Errorf("cut mid-rune: %q", tt.got[len(tt.got)-8:])
			}
		})
	}
}

func FuzzEncodeIsOneLine(f *testing.F) {
	f.Add("/v1/jobs", "")
	f.Add("/v1/\n\r\x00\u2028", "bad\xff\xfe")
	f.Fuzz(func(t *testing.T, path, msg string) {
		e := entry(path)
		e.Error = msg
		e.Time = time.Unix(0, 0)
		line, err := encode(e)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("not one line: %q", line)
		}
		if !json.Valid(line) {
			t.Fatalf("not JSON: %q", line)
		}
	})
}

func TestConcurrentWriters(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"one file", Config{}},
		{"rotating", Config{RotateBytes: 16 << 10, RotateMaxFiles: 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const writers, each = 100, 50
			l := newLog(t, tt.cfg, newFakeClock().Now)
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						e := entry(fmt.Sprintf("/v1/job/w%d-%d", w, i))
						e.Error = strings.Repeat("x", w*7) // lines of many lengths
						if err := l.Write(e); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("Write: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, p := range logFiles(t, filepath.Dir(l.cfg.Path)) {
				for _, e := range readEntries(t, p) {
					seen[e.Path]++
				}
			}
			if len(seen) != writers*each {
				t.Errorf("distinct entries = %d, want %d", len(seen), writers*each)
			}
			for p, n := range seen {
				if n != 1 {
					t.Errorf("%s written %d times, want 1", p, n)
				}
			}
		})
	}
}

// logFiles lists the archives in dir, oldest first, then the live file.
func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name() != "audit.log" && strings.HasPrefix(e.Name(), "audit-") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return append(out, filepath.Join(dir, "audit.log"))
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "audit")
	l := newLog(t, Config{Path: filepath.Join(dir, "audit.log"), RotateBytes: 1}, nil)
	for range 2 {
		if err := l.Write(entry("/v1/jobs")); err != nil { // the second rotates
			t.Fatal(err)
		}
	}
	want := map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Dir(dir): 0o700 | os.ModeDir}
	for _, p := range logFiles(t, dir) {
		want[p] = 0o600
	}
	if len(want) != 4 {
		t.Fatalf("files = %v, want one archive and the live file", want)
	}
	for p, mode := range want {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s mode = %v, want %v", p, fi.Mode(), mode)
		}
	}
}

func TestNewTightensExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	l := newLog(t, Config{Path: path}, nil)
	if err := l.Write(entry("/v1/jobs")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if n := bytes.Count(b, []byte("\n")); n != 2 {
		t.Errorf("lines = %d, want 2 (appended, not truncated)", n)
	}
}

func TestWriteMendsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte("{\"time\":\"2026"), 0o600); err != nil { // a crash mid-line
		t.Fatal(err)
	}
	l := newLog(t, Config{Path: path}, nil)
	writePaths(t, l, "/v1/job/0", "/v1/job/1")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != `{"time":"2026` {
		t.Fatalf("lines = %q, want the torn line alone, then two entries", lines)
	}
	for _, line := range lines[1:] {
		if !json.Valid([]byte(line)) {
			t.Errorf("line %q: not JSON", line)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"empty path", Config{}, "Path is empty"},
		{"negative bytes", Config{Path: "x", RotateBytes: -1}, "RotateBytes -1"},
		{"negative duration", Config{Path: "x", RotateDuration: -time.Second}, "RotateDuration -1s"},
		{"negative max files", Config{Path: "x", RotateMaxFiles: -1}, "RotateMaxFiles -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(tt.cfg, nil)
			if err == nil {
				_ = l.Close()
				t.Fatal("New: no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestWriteAfterClose(t *testing.T) {
	l := newLog(t, Config{}, nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(entry("/v1/jobs")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}
