package rawexec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
)

// TestDisabledByDefault: without Config.Enabled the driver is not
// detected (so the scheduler places nothing here) and starts nothing.
func TestDisabledByDefault(t *testing.T) {
	d := New(nil)
	info := d.Fingerprint(context.Background())
	if info.Detected || info.Healthy || !strings.Contains(info.HealthDescription, `plugin "raw_exec"`) {
		t.Errorf("Fingerprint() = %+v, want not detected, unhealthy, saying how to enable it", info)
	}
	dir := drivertest.ReachableTempDir(t)
	cfg := &drivers.TaskConfig{ID: "off", Config: map[string]any{"command": "/bin/true"}, TaskDir: dir}
	if _, err := d.Start(context.Background(), cfg); !errors.Is(err, drivers.ErrDisabled) {
		t.Errorf("Start = %v, want ErrDisabled", err)
	}
}

// runID runs `id -u; id -g` as a task with user and returns its output.
func runID(t *testing.T, user string) (string, *drivers.TaskConfig) {
	t.Helper()
	dir := drivertest.ReachableTempDir(t)
	taskDir := filepath.Join(dir, "task")
	if err := os.Mkdir(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := newDriver()
	cfg := &drivers.TaskConfig{
		ID:         "id-" + user,
		User:       user,
		Config:     map[string]any{"command": "/bin/sh", "args": []any{"-c", "id -u; id -g; touch written"}},
		TaskDir:    taskDir,
		StdoutPath: filepath.Join(dir, "out"),
		StderrPath: filepath.Join(dir, "err"),
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
		errOut, _ := os.ReadFile(cfg.StderrPath)
		t.Fatalf("result = %v, stderr %q", res, errOut)
	}
	out, _ := os.ReadFile(cfg.StdoutPath)
	return string(out), cfg
}

func TestTaskUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	tests := []struct {
		name, user, want string
	}{
		{"default is nobody", "", "65534\n65534\n"},
		{"named user", "nobody", "65534\n65534\n"},
		{"root when asked", "root", "0\n0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cfg := runID(t, tt.user)
			if got != tt.want {
				t.Errorf("id output = %q, want %q", got, tt.want)
			}
			// The task could write its own dir; the exit status lies
			// outside it, where the task's user cannot plant one.
			if _, err := os.Stat(filepath.Join(cfg.TaskDir, "written")); err != nil {
				t.Errorf("the task could not write its dir: %v", err)
			}
			if sp := statusPath(cfg.TaskDir, cfg.ID); filepath.Dir(sp) == cfg.TaskDir {
				t.Errorf("status file %s is inside the task dir", sp)
			}
		})
	}
}

func TestTaskUserErrors(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	closed := filepath.Join(drivertest.ReachableTempDir(t), "private", "task")
	if err := os.MkdirAll(closed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(closed), 0o700); err != nil { // nobody cannot pass it
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     *drivers.TaskConfig
		wantErr error
		wantMsg string
	}{
		{"unknown user", &drivers.TaskConfig{ID: "u1", User: "no-such-user-drover", TaskDir: drivertest.ReachableTempDir(t)},
			drivers.ErrInvalidConfig, `user "no-such-user-drover"`},
		{"unreachable task dir", &drivers.TaskConfig{ID: "u2", TaskDir: closed},
			nil, "not searchable by user \"nobody\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Config = map[string]any{"command": "/bin/true"}
			_, err := newDriver().Start(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("Start = %v, want an error (%v) containing %q", err, tt.wantErr, tt.wantMsg)
			}
		})
	}
}

// TestExecRunsAsTaskUser: `alloc exec` into a task runs as the task's
// user, not as the agent's.
func TestExecRunsAsTaskUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	dir := drivertest.ReachableTempDir(t)
	d := newDriver()
	cfg := &drivers.TaskConfig{
		ID: "exec-user", Config: map[string]any{"command": "/bin/sleep", "args": []any{"30"}},
		TaskDir: dir, StdoutPath: filepath.Join(dir, "out"),
	}
	if _, err := d.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer d.Destroy(cfg.ID)
	var out bytes.Buffer
	res, err := d.ExecTask(context.Background(), cfg.ID, &drivers.ExecOptions{Command: []string{"id", "-u"}, Stdout: &out})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("ExecTask = %v, %v", res, err)
	}
	if got := strings.TrimSpace(out.String()); got != "65534" {
		t.Errorf("exec'd id -u = %q, want 65534", got)
	}
}
