package allocfs

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestSpecialFilesRefused: a task can make a FIFO (or, with CAP_MKNOD, a
// device node) in its allocation directory. Reading one must neither
// block the client forever (a FIFO with no writer) nor read a host
// device as the agent: both are refused at once, listing still works.
func TestSpecialFilesRefused(t *testing.T) {
	fsys, dir := allocDir(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "alloc/data/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "alloc/logs/web.stdout.0"), 0o644); err != nil {
		t.Fatal(err)
	}
	special := []string{"alloc/data/fifo"}
	// A character device like /dev/zero (1, 5), where this test may make one.
	if syscall.Mknod(filepath.Join(dir, "alloc/data/zero"), syscall.S_IFCHR|0o644, 1<<8|5) == nil {
		special = append(special, "alloc/data/zero")
	}
	for _, p := range special {
		t.Run(p, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				rc, err := fsys.ReadAt(p, 0, 0)
				if err == nil {
					rc.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, structs.ErrInvalid) {
					t.Errorf("ReadAt(%s) = %v, want ErrInvalid", p, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadAt(%s) blocked", p)
			}
		})
	}
	if _, err := fsys.List("alloc/data"); err != nil {
		t.Errorf("List with special files: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := fsys.Logs(ctx, LogsOptions{Task: "web"}, func() bool { return true }, func(*structs.StreamFrame) error { return nil })
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Logs of a FIFO log file = %v, want a prompt refusal", err)
	}
}
