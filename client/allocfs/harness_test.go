package allocfs

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers/logrotate"
	"github.com/droverhq/drover/structs"
)

const testAllocID = "7f3a1c2e-0000-4000-8000-000000000001"

// allocDir builds an allocation directory like the alloc runner's, next
// to a "secret" file outside it, and returns the FS on it and the
// directory's path. Polls are fast so that followers need no sleeps.
func allocDir(t testing.TB) (*FS, string) {
	t.Helper()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "alloc", testAllocID)
	for _, d := range []string{"alloc/logs", "alloc/data", "alloc/tmp", "web/local"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(tmp, "secret"), "outside the allocation")
	write(t, filepath.Join(dir, "web/local/hello.txt"), "hello, world\n")
	fsys, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fsys.PollInterval = time.Millisecond
	t.Cleanup(func() { fsys.Close() })
	return fsys, dir
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// openLog opens a task's stdout log the way the drivers do.
func openLog(t testing.TB, dir, task string, opts logrotate.Options) *logrotate.Writer {
	t.Helper()
	w, err := logrotate.Open(filepath.Join(dir, LogsDir, task+".stdout"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func writeLog(t testing.TB, w *logrotate.Writer, data string) {
	t.Helper()
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
}

// collector is an Emit that keeps the frames it is given.
type collector struct {
	mu     sync.Mutex
	frames []*structs.StreamFrame
	notify chan struct{} // a token after each frame
}

func newCollector() *collector { return &collector{notify: make(chan struct{}, 1)} }

func (c *collector) emit(fr *structs.StreamFrame) error {
	c.mu.Lock()
	c.frames = append(c.frames, fr)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
	return nil
}

// data is the frames' data, concatenated.
func (c *collector) data() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b bytes.Buffer
	for _, fr := range c.frames {
		b.Write(fr.Data)
	}
	return b.String()
}

func (c *collector) snapshot() []*structs.StreamFrame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*structs.StreamFrame(nil), c.frames...)
}

// waitFor waits until cond holds on the frames so far, or fails after a
// generous deadline (this is a failure path, not a sleep).
func (c *collector) waitFor(t *testing.T, what string, cond func([]*structs.StreamFrame) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond(c.snapshot()) {
		select {
		case <-c.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; got data %q", what, c.data())
		}
	}
}

// hasData returns a waitFor condition: the data so far is want.
func (c *collector) hasData(want string) func([]*structs.StreamFrame) bool {
	return func([]*structs.StreamFrame) bool { return c.data() == want }
}

// run runs fn in a goroutine and returns its result channel.
func run(fn func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	return done
}

func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not end")
		return nil
	}
}

// deadFlag is a dead func a test sets.
type deadFlag struct {
	mu   sync.Mutex
	dead bool
}

func (d *deadFlag) set() {
	d.mu.Lock()
	d.dead = true
	d.mu.Unlock()
}

func (d *deadFlag) get() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dead
}
