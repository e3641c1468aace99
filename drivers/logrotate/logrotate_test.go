package logrotate

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func mustOpen(t *testing.T, base string, opts Options) *Writer {
	t.Helper()
	w, err := Open(base, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// contents returns the log's files (by name) and their contents.
func contents(t *testing.T, base string) map[string]string {
	t.Helper()
	files, err := Files(base)
	if err != nil {
		t.Fatalf("Files: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

func TestWriterRotates(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		writes []string
		want   map[string]string
		offset int64
	}{
		{
			name:   "fills a file exactly then moves on",
			opts:   Options{MaxFiles: 5, MaxFileBytes: 4},
			writes: []string{"abcd", "ef"},
			want:   map[string]string{"out.0": "abcd", "out.1": "ef"},
			offset: 6,
		},
		{
			name:   "splits one write across files",
			opts:   Options{MaxFiles: 5, MaxFileBytes: 4},
			writes: []string{"abcdefghij"},
			want:   map[string]string{"out.0": "abcd", "out.1": "efgh", "out.2": "ij"},
			offset: 10,
		},
		{
			name:   "prunes beyond max files",
			opts:   Options{MaxFiles: 2, MaxFileBytes: 3},
			writes: []string{"aaa", "bbb", "ccc", "dd"},
			want:   map[string]string{"out.2": "ccc", "out.3": "dd"},
			offset: 11,
		},
		{
			name:   "a single file is replaced whole",
			opts:   Options{MaxFiles: 1, MaxFileBytes: 3},
			writes: []string{"aaab"},
			want:   map[string]string{"out.1": "b"},
			offset: 4,
		},
		{
			name:   "rotation off writes the base itself",
			opts:   Options{},
			writes: []string{"abcdefgh"},
			want:   map[string]string{},
			offset: 8,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "out")
			w := mustOpen(t, base, tt.opts)
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if got := contents(t, base); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("files = %v, want %v", got, tt.want)
			}
			if got := w.Offset(); got != tt.offset {
				t.Errorf("Offset() = %d, want %d", got, tt.offset)
			}
		})
	}
}

func TestRotationOffUsesBase(t *testing.T) {
	base := filepath.Join(t.TempDir(), "out")
	w := mustOpen(t, base, Options{})
	w.Write([]byte("hello"))
	if b, _ := os.ReadFile(base); string(b) != "hello" {
		t.Errorf("base holds %q, want %q", b, "hello")
	}
}

func TestReopenContinuesInHighestFile(t *testing.T) {
	base := filepath.Join(t.TempDir(), "out")
	opts := Options{MaxFiles: 3, MaxFileBytes: 4}
	w := mustOpen(t, base, opts)
	w.Write([]byte("abcdef")) // out.0 = abcd, out.1 = ef
	w.Close()                 // as if the process died here

	w2 := mustOpen(t, base, opts)
	if got, want := w2.Offset(), int64(6); got != want {
		t.Errorf("reopened Offset() = %d, want %d", got, want)
	}
	w2.Write([]byte("ghijklmnop"))
	want := map[string]string{"out.1": "efgh", "out.2": "ijkl", "out.3": "mnop"}
	if got := contents(t, base); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files = %v, want %v", got, want)
	}
	if got, want := w2.Offset(), int64(16); got != want {
		t.Errorf("Offset() = %d, want %d", got, want)
	}
}

func TestConcurrentWritesDoNotInterleave(t *testing.T) {
	base := filepath.Join(t.TempDir(), "out")
	w := mustOpen(t, base, Options{MaxFiles: 100, MaxFileBytes: 1000})
	const writers, perWriter, size = 8, 50, 100
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := bytes.Repeat([]byte{byte('a' + i)}, size)
			for range perWriter {
				if _, err := w.Write(rec); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var all strings.Builder
	files, _ := Files(base)
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all.Write(b)
	}
	got := all.String()
	if len(got) != writers*perWriter*size {
		t.Fatalf("log holds %d bytes, want %d", len(got), writers*perWriter*size)
	}
	for i := 0; i < len(got); i += size {
		rec := got[i : i+size]
		if strings.Count(rec, rec[:1]) != size {
			t.Fatalf("record at %d is interleaved: %q", i, rec)
		}
	}
}

func TestOpenRejectsBadOptions(t *testing.T) {
	base := filepath.Join(t.TempDir(), "out")
	for _, opts := range []Options{{MaxFiles: -1}, {MaxFiles: 2, MaxFileBytes: 0}} {
		if _, err := Open(base, opts); err == nil {
			t.Errorf("Open(%+v) succeeded, want an error", opts)
		}
	}
}

func TestFilesAndSplit(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "t.stdout")
	for _, name := range []string{"t.stdout.10", "t.stdout.2", "t.stdout.x", "t.stdout.01", "t.stderr.0", "t.stdout"} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o644)
	}
	files, err := Files(base)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{base + ".2", base + ".10"}
	if fmt.Sprint(files) != fmt.Sprint(want) {
		t.Errorf("Files = %v, want %v", files, want)
	}
	if got := Current(base); got != base+".10" {
		t.Errorf("Current = %q, want %q", got, base+".10")
	}
	if got := Current(filepath.Join(dir, "none")); got != filepath.Join(dir, "none.0") {
		t.Errorf("Current(no files) = %q", got)
	}
	if b, i, ok := Split(base + ".10"); b != base || i != 10 || !ok {
		t.Errorf("Split = %q, %d, %v", b, i, ok)
	}
}

func TestPumpDrainsWithoutWaitingForLeftovers(t *testing.T) {
	base := filepath.Join(t.TempDir(), "out")
	w := mustOpen(t, base, Options{MaxFiles: 2, MaxFileBytes: 1 << 20})
	p, pw, err := NewPipe(w)
	if err != nil {
		t.Fatal(err)
	}
	// The shell prints, leaves a child holding the pipe, and exits.
	cmd := exec.Command("/bin/sh", "-c", "echo before; sleep 30 & echo after")
	cmd.Stdout = pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	pw.Close()
	cmd.Wait()
	start := time.Now()
	p.Drain(200 * time.Millisecond)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Drain took %v", took)
	}
	if got, want := contents(t, base)["out.0"], "before\nafter\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

// TestOpenDoesNotFollowPlantedLinks: a task that can write the log dir
// planted a link where the next log file goes (or replaced the dir by a
// link): the writer refuses it, and the target is untouched.
func TestOpenDoesNotFollowPlantedLinks(t *testing.T) {
	outside := t.TempDir()
	target := filepath.Join(outside, "passwd")
	if err := os.WriteFile(target, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "web.stdout")
	if err := os.Symlink(target, base+".0"); err != nil {
		t.Fatal(err)
	}
	if w, err := Open(base, Options{MaxFiles: 2, MaxFileBytes: 1000}); err == nil {
		_, _ = w.Write([]byte("pwned\n"))
		w.Close()
		t.Error("opened a log file that is a symlink")
	}
	linkedDir := filepath.Join(t.TempDir(), "logs")
	if err := os.Symlink(outside, linkedDir); err != nil {
		t.Fatal(err)
	}
	if w, err := Open(filepath.Join(linkedDir, "web.stdout"), Options{}); err == nil {
		w.Close()
		t.Error("opened a log in a dir that is a symlink")
	}
	if got, _ := os.ReadFile(target); string(got) != "root:x:0:0\n" {
		t.Errorf("target = %q, changed", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "web.stdout")); err == nil {
		t.Error("a log file was created through the linked dir")
	}
}
