package rawexec

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
)

// startForRecovery starts script with a first driver (the "old agent")
// and returns its handle; the first driver is destroyed at cleanup.
func startForRecovery(t *testing.T, id, script string) (*drivers.TaskHandle, string) {
	t.Helper()
	dir := drivertest.ReachableTempDir(t)
	old := newDriver()
	h, err := old.Start(context.Background(), &drivers.TaskConfig{
		ID:         id,
		Config:     map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
		TaskDir:    dir,
		StdoutPath: filepath.Join(dir, "out"),
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = old.Destroy(id) })
	return h, dir
}

func waitResult(t *testing.T, d *Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := d.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	res, ok := <-ch
	if !ok {
		t.Fatal("no exit result within 10s")
	}
	return res
}

// TestRecoverDeliversLaterExit: a second driver re-attaches to a running
// task and learns its exit code when it ends, through the executor's
// status file.
func TestRecoverDeliversLaterExit(t *testing.T) {
	h, dir := startForRecovery(t, "later", `while [ ! -e go ]; do sleep 0.01; done; exit 7`)
	d := NewWithConfig(nil, Config{Enabled: true, PollInterval: 10 * time.Millisecond})
	if err := d.RecoverTask(h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	defer d.Destroy(h.ID)
	if err := d.Signal(h.ID, "SIGCONT"); err != nil {
		t.Errorf("Signal on a recovered running task: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := waitResult(t, d, h.ID); got.ExitCode != 7 || got.Err != nil {
		t.Errorf("result = %v, want exit code 7", got)
	}
}

// TestRecoverThenStop: Stop on a recovered task signals its group and
// returns once it is dead.
func TestRecoverThenStop(t *testing.T) {
	h, _ := startForRecovery(t, "stop", `exec sleep 600`)
	pid, _ := strconv.Atoi(h.State["pid"])
	d := newDriver()
	if err := d.RecoverTask(h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	if err := d.Stop(h.ID, 5*time.Second, "SIGTERM"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := waitResult(t, d, h.ID); got.Signal != int(syscall.SIGTERM) {
		t.Errorf("result = %v, want signal %d", got, syscall.SIGTERM)
	}
	if _, alive := procStart(pid); alive {
		t.Errorf("task %d still alive after Stop", pid)
	}
	if err := d.Destroy(h.ID); err != nil {
		t.Errorf("Destroy: %v", err)
	}
	if _, err := os.Stat(h.State["status_file"]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("status file after Destroy: %v, want it removed", err)
	}
}

// TestRecoverEndedTask: a task that ended while no agent watched
// delivers the exit code its executor wrote.
func TestRecoverEndedTask(t *testing.T) {
	h, _ := startForRecovery(t, "ended", `exit 3`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(h.State["status_file"]); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no status file within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	d := newDriver()
	if err := d.RecoverTask(h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	if got := waitResult(t, d, h.ID); got.ExitCode != 3 {
		t.Errorf("result = %v, want exit code 3", got)
	}
	if err := d.Stop(h.ID, time.Second, ""); err != nil {
		t.Errorf("Stop of an ended task: %v, want nil", err)
	}
}

func TestRecoverFailures(t *testing.T) {
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dir := drivertest.ReachableTempDir(t)
	tests := []struct {
		name  string
		state map[string]string
		want  error
	}{
		{"executor gone, no status", map[string]string{"pid": "1", "shim_pid": strconv.Itoa(gone.Process.Pid), "shim_start": "1", "status_file": filepath.Join(dir, "none")}, drivers.ErrTaskNotFound},
		{"live pid, other process", map[string]string{"pid": "1", "shim_pid": strconv.Itoa(os.Getpid()), "shim_start": "1", "status_file": filepath.Join(dir, "none")}, drivers.ErrTaskNotFound},
		{"missing state", map[string]string{"pid": "12"}, drivers.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDriver()
			err := d.RecoverTask(&drivers.TaskHandle{ID: "x", Driver: Name, State: tt.state})
			if !errors.Is(err, tt.want) {
				t.Errorf("RecoverTask = %v, want %v", err, tt.want)
			}
			if _, err := d.Wait(context.Background(), "x"); !errors.Is(err, drivers.ErrTaskNotFound) {
				t.Errorf("Wait after failed recovery = %v, want ErrTaskNotFound", err)
			}
		})
	}
}

// TestTaskOutlivesExecutorParent: the executor runs in its own session,
// so the task is not in the agent's process group or session.
func TestTaskOutlivesExecutorParent(t *testing.T) {
	h, _ := startForRecovery(t, "session", `exec sleep 600`)
	pid, _ := strconv.Atoi(h.State["pid"])
	shim, _ := strconv.Atoi(h.State["shim_pid"])
	mySid, _ := getsid(0)
	shimSid, err := getsid(shim)
	if err != nil {
		t.Fatal(err)
	}
	if shimSid == mySid || shimSid != shim {
		t.Errorf("executor session = %d, want its own (%d), not the agent's %d", shimSid, shim, mySid)
	}
	if pgid, _ := syscall.Getpgid(pid); pgid != pid {
		t.Errorf("task process group = %d, want its own %d", pgid, pid)
	}
}

func getsid(pid int) (int, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// startInAllocDir starts `exec sleep 600` with a first driver, its task
// dir under root/<alloc>/, and kills the task's executor with SIGKILL:
// the task lives on, re-parented, with nothing watching it. It returns
// the handle and the task's PID.
func startWithDeadExecutor(t *testing.T, root, id string) (*drivers.TaskHandle, int) {
	t.Helper()
	dir := filepath.Join(root, "alloc-"+id, "task")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := newDriver()
	h, err := old.Start(context.Background(), &drivers.TaskConfig{
		ID: id, Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "exec sleep 600"}},
		TaskDir: dir, StdoutPath: filepath.Join(dir, "out"),
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pid, _ := strconv.Atoi(h.State["pid"])
	shim, _ := strconv.Atoi(h.State["shim_pid"])
	shimStart, _ := strconv.ParseUint(h.State["shim_start"], 10, 64)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	// The pid file is written before the executor reports the start.
	if _, err := os.Stat(pidPath(dir, id)); err != nil {
		t.Fatalf("pid file: %v", err)
	}
	if err := syscall.Kill(shim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(context.Background(), shim, shimStart)
	if s, ok := procStart(shim); ok && s == shimStart {
		t.Fatal("executor still alive after SIGKILL")
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("task died with its executor (%v): nothing to test", err)
	}
	return h, pid
}

func taskAlive(pid int, start uint64) bool {
	s, ok := procStart(pid)
	return ok && s == start
}

// TestOrphanWithDeadExecutorIsKilled: a task whose executor died is
// still found through its pid file (the task's own start time proves
// its PID is still it) and killed, by the orphan sweep and by KillTask.
func TestOrphanWithDeadExecutorIsKilled(t *testing.T) {
	root := drivertest.ReachableTempDir(t)
	d := newDriver()

	_, pid := startWithDeadExecutor(t, root, "sweep")
	start, _ := procStart(pid)
	killed, err := d.KillOrphans(context.Background(), root, nil)
	if err != nil {
		t.Fatalf("KillOrphans: %v", err)
	}
	if len(killed) != 1 || killed[0] != "sweep" {
		t.Errorf("KillOrphans killed %v, want [sweep]", killed)
	}
	if taskAlive(pid, start) {
		t.Errorf("task %d still runs after the sweep", pid)
	}

	h, pid := startWithDeadExecutor(t, root, "handle")
	start, _ = procStart(pid)
	if err := d.RecoverTask(h); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("RecoverTask with the executor gone = %v, want ErrTaskNotFound", err)
	}
	if err := d.KillTask(context.Background(), h); err != nil {
		t.Fatalf("KillTask: %v", err)
	}
	if taskAlive(pid, start) {
		t.Errorf("task %d still runs after KillTask", pid)
	}
	if _, err := os.Stat(pidPath(h.Config.TaskDir, h.ID)); !os.IsNotExist(err) {
		t.Errorf("pid file after KillTask: %v, want removed", err)
	}
}
