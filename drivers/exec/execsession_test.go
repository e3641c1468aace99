//go:build linux

package exec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// execIn runs command in the task and returns its stdout, failing the
// test unless it exits with want.
func execIn(t *testing.T, d *Driver, id string, want int, command ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	res, err := d.ExecTask(ctx, id, &drivers.ExecOptions{Command: command, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatalf("ExecTask %q: %v (stderr %q)", command, err, stderr.String())
	}
	if res.ExitCode != want {
		t.Fatalf("ExecTask %q: exit code %d, want %d (stdout %q, stderr %q)", command, res.ExitCode, want, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestExecIsolation checks that an exec'd command is inside the task's
// isolation, not beside it: the same PID and mount namespaces (it sees a
// mount that exists only in the task's namespace), the same cgroup, the
// same user.
func TestExecIsolation(t *testing.T) {
	requireIsolation(t)
	d := New(nil, Config{})
	const probe = `cat /proc/self/cgroup; readlink /proc/self/ns/pid /proc/self/ns/mnt; id -u`
	cfg := shTask(t, `mkdir m && mount -t tmpfs none m && echo secret > m/only-in-task && (`+probe+`) > task.view && echo ready; exec sleep 1000`, nil)
	cfg.User = "root" // to mount
	startTask(t, d, cfg)
	waitForFile(t, cfg.StdoutPath, "ready")
	taskView := readFile(t, filepath.Join(cfg.TaskDir, "task.view"))

	if got := execIn(t, d, cfg.ID, 0, "/bin/sh", "-c", probe); got != taskView {
		t.Errorf("exec'd command's cgroup, namespaces, uid:\n%s\nwant the task's:\n%s", got, taskView)
	}
	if got := execIn(t, d, cfg.ID, 0, "cat", "m/only-in-task"); got != "secret\n" {
		t.Errorf("exec'd command reads %q from the task's tmpfs, want %q", got, "secret\n")
	}
	if _, err := os.Stat(filepath.Join(cfg.TaskDir, "m", "only-in-task")); !os.IsNotExist(err) {
		t.Errorf("host sees the task's mount: stat err = %v, want not exist", err)
	}
	hostNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(taskView, hostNS) {
		t.Errorf("task's view %q shows the host's PID namespace %s", taskView, hostNS)
	}
	// In the task's PID namespace, /proc lists the task's processes
	// only: its init (1), its command and the exec'd ones.
	procs := strings.Fields(execIn(t, d, cfg.ID, 0, "/bin/sh", "-c", `cd /proc && echo [0-9]*`))
	if len(procs) > 4 || procs[0] != "1" {
		t.Errorf("exec'd command's /proc lists %v, want only the task's few processes from PID 1", procs)
	}
}

// TestExecMemoryLimit: an exec'd command counts against the task's
// memory limit.
func TestExecMemoryLimit(t *testing.T) {
	requireIsolation(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := New(nil, withTestBinary(t))
	cfg := shTask(t, "exec sleep 1000", &structs.AllocatedTaskResources{Memory: structs.AllocatedMemoryResources{MemoryMB: 96}})
	startTask(t, d, cfg)
	tests := []struct {
		name string
		mb   string
		code int
	}{
		{"within limit", "8", 0},
		{"over limit", "256", 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			execIn(t, d, cfg.ID, tt.code, "/bin/sh", "-c", hogEnv+"="+tt.mb+" exec "+exe)
		})
	}
}

// TestExecCommandLookup: the command is looked up in the task's PATH,
// and one that is not there is an invalid config, not an exit code.
func TestExecCommandLookup(t *testing.T) {
	requireIsolation(t)
	d := New(nil, Config{})
	cfg := shTask(t, "mkdir bin && printf '#!/bin/sh\\necho mine\\n' > bin/mine && chmod +x bin/mine && echo ready; exec sleep 1000", nil)
	cfg.Env = map[string]string{"PATH": "/usr/bin:/bin:" + filepath.Join(cfg.TaskDir, "bin")}
	startTask(t, d, cfg)
	waitForFile(t, cfg.StdoutPath, "ready")
	if got := execIn(t, d, cfg.ID, 0, "mine"); got != "mine\n" {
		t.Errorf("stdout = %q, want the task's own command found in its PATH", got)
	}
	_, err := d.ExecTask(context.Background(), cfg.ID, &drivers.ExecOptions{Command: []string{"no-such-command"}})
	if !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("ExecTask of a missing command: %v, want ErrInvalidConfig", err)
	}
}
