package mps

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/client/mps/mpstest"
)

// newManager returns a Manager on a temp dir with the fake control
// program, closed when the test ends.
func newManager(t *testing.T, control, dir string) *Manager {
	t.Helper()
	m := New(Config{Dir: dir, Control: control, StopTimeout: 5 * time.Second})
	t.Cleanup(func() { m.Close() })
	return m
}

func daemonPID(t *testing.T, m *Manager, gpu string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.gpuDir(gpu), pidFile))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

func TestOneDaemonPerGPUStoppedWithItsLastHolder(t *testing.T) {
	control, log := mpstest.Control(t)
	dir := t.TempDir()
	m := newManager(t, control, dir)

	// Two slices of GPU A, one of GPU B.
	pipeA, err := m.Acquire("GPU-a", "alloc-1")
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if pipeA != filepath.Join(dir, "GPU-a", "pipe") {
		t.Errorf("pipe dir: got %s", pipeA)
	}
	if again, err := m.Acquire("GPU-a", "alloc-2"); err != nil || again != pipeA {
		t.Fatalf("second acquire: %s %v", again, err)
	}
	if _, err := m.Acquire("GPU-b", "alloc-3"); err != nil {
		t.Fatalf("acquire B: %v", err)
	}
	starts := []string{
		"start gpu=GPU-a pipe=" + pipeA + " log=" + filepath.Join(dir, "GPU-a", "log"),
		"start gpu=GPU-b pipe=" + m.PipeDir("GPU-b") + " log=" + m.LogDir("GPU-b"),
	}
	if got := log.Lines(); !slices.Equal(got, starts) {
		t.Fatalf("calls: got %q, want one start per GPU %q", got, starts)
	}
	if got := m.Running(); !slices.Equal(got, []string{"GPU-a", "GPU-b"}) {
		t.Errorf("running: got %v", got)
	}
	pidA := daemonPID(t, m, "GPU-a")

	// The first of A's holders goes: A's daemon stays.
	if err := m.Release("GPU-a", "alloc-1"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if processGone(pidA) || len(log.Lines()) != 2 {
		t.Fatalf("daemon A stopped while alloc-2 holds it; calls %q", log.Lines())
	}
	// The last goes: quit, and the daemon exits.
	if err := m.Release("GPU-a", "alloc-2"); err != nil {
		t.Fatalf("release: %v", err)
	}
	log.WaitCount(t, "quit gpu=GPU-a", 1, 10*time.Second)
	log.WaitCount(t, "exit gpu=GPU-a", 1, 10*time.Second)
	if !processGone(pidA) {
		t.Errorf("daemon A (pid %d) still runs", pidA)
	}
	if got := m.Running(); !slices.Equal(got, []string{"GPU-b"}) {
		t.Errorf("running: got %v, want GPU-b only", got)
	}
	// Releasing again, or what was never held, does nothing.
	if err := m.Release("GPU-a", "alloc-2"); err != nil {
		t.Errorf("second release: %v", err)
	}
	// A new holder of A starts a new daemon.
	if _, err := m.Acquire("GPU-a", "alloc-4"); err != nil {
		t.Fatal(err)
	}
	log.WaitCount(t, "start gpu=GPU-a", 2, 10*time.Second)
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	log.WaitCount(t, "exit gpu=", 3, 10*time.Second)
}

func TestRestartedClientAdoptsTheRunningDaemon(t *testing.T) {
	control, log := mpstest.Control(t)
	dir := t.TempDir()
	first := New(Config{Dir: dir, Control: control})
	if _, err := first.Acquire("GPU-a", "alloc-1"); err != nil {
		t.Fatal(err)
	}
	pid := daemonPID(t, first, "GPU-a")
	// The first client goes away without stopping it (tasks left running);
	// its child is reaped by whoever adopts or kills it below.
	second := newManager(t, control, dir)
	if _, err := second.Acquire("GPU-a", "alloc-1"); err != nil {
		t.Fatal(err)
	}
	log.WaitCount(t, "start", 1, 10*time.Second) // no second start
	if err := second.Release("GPU-a", "alloc-1"); err != nil {
		t.Fatalf("release: %v", err)
	}
	log.WaitCount(t, "exit gpu=GPU-a", 1, 10*time.Second)
	// The first manager's child is a zombie until reaped: reap it.
	if first.daemons["GPU-a"].waitExit(5*time.Second) == false || !processGone(pid) {
		t.Errorf("daemon %d still runs", pid)
	}
}

func TestDaemonThatExitsAtStartIsAnError(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "broken-mps-control")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'no GPU here' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, script, t.TempDir())
	_, err := m.Acquire("GPU-a", "alloc-1")
	if err == nil || !strings.Contains(err.Error(), "exited at start") || !strings.Contains(err.Error(), "no GPU here") {
		t.Fatalf("got %v, want an error with the daemon's output", err)
	}
	if len(m.Running()) != 0 {
		t.Errorf("running: %v", m.Running())
	}
}

func TestMissingControlProgram(t *testing.T) {
	if Available("/nonexistent/nvidia-cuda-mps-control") {
		t.Errorf("Available: got true for a missing path")
	}
	m := newManager(t, "/nonexistent/nvidia-cuda-mps-control", t.TempDir())
	if _, err := m.Acquire("GPU-a", "x"); err == nil || !strings.Contains(err.Error(), "/nonexistent/nvidia-cuda-mps-control") {
		t.Errorf("got %v, want an error naming the program", err)
	}
	if _, err := m.Acquire("../etc", "x"); err == nil {
		t.Errorf("a GPU name with a path in it was accepted")
	}
}
