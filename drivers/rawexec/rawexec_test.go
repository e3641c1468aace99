package rawexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
)

// newDriver is an enabled raw_exec driver.
func newDriver() *Driver { return NewWithConfig(nil, Config{Enabled: true}) }

func TestConformance(t *testing.T) {
	drivertest.Run(t, func() drivers.Driver { return newDriver() })
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name     string
		cfg      map[string]any
		wantCmd  string
		wantArgs []string
		wantErr  bool
	}{
		{"command only", map[string]any{"command": "echo"}, "echo", nil, false},
		{"any args", map[string]any{"command": "echo", "args": []any{"a", "b"}}, "echo", []string{"a", "b"}, false},
		{"string args", map[string]any{"command": "echo", "args": []string{"a"}}, "echo", []string{"a"}, false},
		{"missing command", map[string]any{"args": []any{"a"}}, "", nil, true},
		{"blank command", map[string]any{"command": "  "}, "", nil, true},
		{"non-string arg", map[string]any{"command": "echo", "args": []any{"a", 3}}, "", nil, true},
		{"args not a list", map[string]any{"command": "echo", "args": "a b"}, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, args, err := parseConfig(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseConfig() error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, drivers.ErrInvalidConfig) {
				t.Errorf("error %v is not ErrInvalidConfig", err)
			}
			if cmd != tt.wantCmd || strings.Join(args, "|") != strings.Join(tt.wantArgs, "|") {
				t.Errorf("parseConfig() = %q %q, want %q %q", cmd, args, tt.wantCmd, tt.wantArgs)
			}
		})
	}
}

func TestDefaultEnv(t *testing.T) {
	dir := drivertest.ReachableTempDir(t)
	d := newDriver()
	cfg := &drivers.TaskConfig{
		ID:         "env",
		Config:     map[string]any{"command": "sh", "args": []any{"-c", `echo "PATH=$PATH"; echo "HOME=$HOME"`}},
		TaskDir:    dir,
		StdoutPath: filepath.Join(dir, "out"),
	}
	if _, err := d.Start(context.Background(), cfg); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer d.Destroy(cfg.ID)
	ch, err := d.Wait(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res := <-ch; !res.Successful() {
		t.Fatalf("result = %v", res)
	}
	b, _ := os.ReadFile(cfg.StdoutPath)
	want := "PATH=" + DefaultPath + "\nHOME=" + dir + "\n"
	if string(b) != want {
		t.Errorf("stdout = %q, want %q", b, want)
	}
}

func TestCommandNotInTaskPath(t *testing.T) {
	dir := drivertest.ReachableTempDir(t)
	d := newDriver()
	cfg := &drivers.TaskConfig{
		ID:      "nopath",
		Env:     map[string]string{"PATH": dir},
		Config:  map[string]any{"command": "sh"},
		TaskDir: dir,
	}
	_, err := d.Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "not found in task PATH") {
		t.Errorf("Start = %v, want a not-found error naming the task PATH", err)
	}
}

// TestExitKillsLeftoverChildren: when the task's main process exits, the
// children it left in its group are killed right then, while the group
// ID cannot yet name anyone else's processes, not by a later Destroy.
func TestExitKillsLeftoverChildren(t *testing.T) {
	dir := drivertest.ReachableTempDir(t)
	d := newDriver()
	cfg := &drivers.TaskConfig{
		ID:         "leaves-child",
		Config:     map[string]any{"command": "/bin/sh", "args": []any{"-c", `sleep 30 & echo $!`}},
		TaskDir:    dir,
		StdoutPath: filepath.Join(dir, "out"),
	}
	if _, err := d.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer d.Destroy(cfg.ID)
	ch, err := d.Wait(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res := <-ch; res == nil || res.ExitCode != 0 {
		t.Fatalf("exit = %v, want 0", res)
	}
	b, _ := os.ReadFile(cfg.StdoutPath)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child pid %q: %v", b, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(child, 0) == nil && !isZombie(child) {
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("child %d still runs after the task exited", child)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := d.Signal(cfg.ID, "SIGTERM"); err == nil {
		t.Error("Signal after exit succeeded, want an error")
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// TestMissingCommandIsInvalidConfig: a command that is not there (or not
// executable) is a config error, so the task runner does not retry it.
func TestMissingCommandIsInvalidConfig(t *testing.T) {
	dir := drivertest.ReachableTempDir(t)
	notExec := filepath.Join(dir, "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{"/no/such/binary", "no-such-command-anywhere", notExec} {
		t.Run(command, func(t *testing.T) {
			d := newDriver()
			cfg := &drivers.TaskConfig{ID: "missing", Config: map[string]any{"command": command}, TaskDir: dir}
			if _, err := d.Start(context.Background(), cfg); !errors.Is(err, drivers.ErrInvalidConfig) {
				t.Errorf("Start = %v, want ErrInvalidConfig", err)
			}
		})
	}
}
