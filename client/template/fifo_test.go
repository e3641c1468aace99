package template

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadFileRefusesFIFO: a FIFO where a template source is read
// fails at once instead of blocking the client forever.
func TestReadFileRefusesFIFO(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "src.tpl"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(root, "src.tpl", 1<<10); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("read a FIFO as a template source")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile blocked on a FIFO")
	}
}
