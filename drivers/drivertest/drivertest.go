// Package drivertest is the conformance suite every task driver passes:
// Run(t, newDriver) starts real tasks through the driver and checks the
// behaviour the client relies on (environment, working dir, output
// files, exit codes, graceful stop then SIGKILL, Destroy) and, for
// drivers that implement drivers.Execer, exec sessions (exec.go).
//
// Tasks are /bin/sh scripts given as driver config {"command": "/bin/sh",
// "args": ["-c", script]}, the shape raw_exec and exec take. It owns no
// driver and must not depend on one.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
)

// waitLimit bounds every wait in the suite so a broken driver fails
// instead of hanging.
const waitLimit = 10 * time.Second

// leakVar is set in the test process; a task's env must not carry it.
const leakVar = "DROVERTEST_AGENT_ONLY"

// Option changes how Run runs the suite.
type Option func(*options)

type options struct {
	skip map[string]string
	task TaskFunc // nil: host /bin/sh tasks (shTask)
}

func newOptions(opts []Option) options {
	o := options{skip: map[string]string{}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Skip leaves out the named subtest, with the reason logged. A driver uses
// it only where the check cannot apply (e.g. DestroyKillsGroup reads host
// PIDs, which mean something else inside a PID namespace) and covers the
// same property with a test of its own.
func Skip(name, reason string) Option {
	return func(o *options) { o.skip[name] = reason }
}

// Run runs the conformance suite against drivers made by newDriver; each
// subtest gets a fresh driver. Drivers that implement drivers.Execer
// also run the exec checks (see RunExec).
func Run(t *testing.T, newDriver func() drivers.Driver, opts ...Option) {
	t.Helper()
	o := newOptions(opts)
	tests := []suiteTest{
		{name: "Fingerprint", fn: testFingerprint},
		{name: "EnvAndDir", fn: testEnvAndDir},
		{name: "ExitCodes", fn: testExitCodes},
		{name: "OutputFilesAppend", fn: testOutputFilesAppend},
		{name: "WaitAfterExit", fn: testWaitAfterExit},
		{name: "WaitContextCancel", fn: testWaitContextCancel},
		{name: "StopGraceful", fn: testStopGraceful},
		{name: "StopCustomSignal", fn: testStopCustomSignal},
		{name: "StopEscalatesToKill", fn: testStopEscalatesToKill},
		{name: "StopExitedIsNoop", fn: testStopExitedIsNoop},
		{name: "DestroyKillsGroup", fn: testDestroyKillsGroup},
		{name: "DuplicateID", fn: testDuplicateID},
		{name: "UnknownTask", fn: testUnknownTask},
		{name: "InvalidConfig", fn: testInvalidConfig},
	}
	if _, ok := newDriver().(drivers.Execer); ok {
		tests = append(tests, execTests(o)...)
	}
	runTests(t, newDriver, o, tests)
}

// suiteTest is one check of the suite.
type suiteTest struct {
	name string
	fn   func(t *testing.T, d drivers.Driver)
	// sequential tests run alone, before the parallel ones start.
	sequential bool
}

// runTests runs tests, each on a fresh driver: the sequential ones one
// by one, then the rest in parallel.
func runTests(t *testing.T, newDriver func() drivers.Driver, o options, tests []suiteTest) {
	t.Helper()
	// Set in the agent's environment; tasks must not see it.
	t.Setenv(leakVar, "leaked")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if reason, ok := o.skip[tt.name]; ok {
				t.Skip(reason)
			}
			if !tt.sequential {
				t.Parallel()
			}
			tt.fn(t, newDriver())
		})
	}
}

// shTask returns a TaskConfig running script under /bin/sh in a fresh
// task dir.
func shTask(t *testing.T, script string, env map[string]string) *drivers.TaskConfig {
	t.Helper()
	dir := ReachableTempDir(t)
	taskDir := filepath.Join(dir, "task")
	if err := os.Mkdir(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &drivers.TaskConfig{
		ID:         "task-" + strings.ReplaceAll(t.Name(), "/", "-"),
		AllocID:    "alloc-1",
		JobName:    "job",
		TaskName:   "task",
		Env:        env,
		Config:     map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
		TaskDir:    taskDir,
		StdoutPath: filepath.Join(dir, "task.stdout.0"),
		StderrPath: filepath.Join(dir, "task.stderr.0"),
	}
}

// ReachableTempDir is t.TempDir() made searchable by every user, its
// parent too (the test's own temp dir, 0700): drivers run tasks as
// nobody, who must reach the task dir.
func ReachableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func start(t *testing.T, d drivers.Driver, cfg *drivers.TaskConfig) {
	t.Helper()
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if h == nil || h.ID != cfg.ID {
		t.Fatalf("Start returned handle %+v, want ID %q", h, cfg.ID)
	}
	t.Cleanup(func() { _ = d.Destroy(cfg.ID) })
}

// waitExit waits for the task's result.
func waitExit(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ch, err := d.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	res, ok := <-ch
	if !ok || res == nil {
		t.Fatalf("Wait: no result within %v", waitLimit)
	}
	return res
}

// waitForFile polls until path contains want.
func waitForFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("%s never contained %q; got %q", path, want, b)
}

func evalSymlinks(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testFingerprint(t *testing.T, d drivers.Driver) {
	if d.Name() == "" {
		t.Error("Name() is empty")
	}
	info := d.Fingerprint(context.Background())
	if info == nil || !info.Detected || !info.Healthy {
		t.Errorf("Fingerprint() = %+v, want detected and healthy", info)
	}
}

func testEnvAndDir(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, `echo "FOO=$FOO"; echo "SPACED=$SPACED"; echo "LEAK=${`+leakVar+`:-unset}"; echo "PWD=$(pwd -P)"`,
		map[string]string{"FOO": "bar", "SPACED": "a b=c"})
	start(t, d, cfg)
	res := waitExit(t, d, cfg.ID)
	if !res.Successful() {
		t.Fatalf("result = %v, want success", res)
	}
	wantDir, err := filepath.EvalSymlinks(cfg.TaskDir)
	if err != nil {
		t.Fatal(err)
	}
	out := readFile(t, cfg.StdoutPath)
	for _, want := range []string{"FOO=bar\n", "SPACED=a b=c\n", "LEAK=unset\n", "PWD=" + wantDir + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout = %q, want it to contain %q", out, want)
		}
	}
}

func testExitCodes(t *testing.T, d drivers.Driver) {
	tests := []struct {
		name   string
		script string
		code   int
		ok     bool
	}{
		{"zero", "exit 0", 0, true},
		{"one", "exit 1", 1, false},
		{"fortytwo", "exit 42", 42, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := shTask(t, tt.script, nil)
			start(t, d, cfg)
			res := waitExit(t, d, cfg.ID)
			if res.ExitCode != tt.code || res.Signal != 0 || res.Successful() != tt.ok {
				t.Errorf("result = %+v, want exit code %d, no signal, successful %v", res, tt.code, tt.ok)
			}
		})
	}
}

func testOutputFilesAppend(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, `echo out-line; echo err-line >&2`, nil)
	if err := os.WriteFile(cfg.StdoutPath, []byte("earlier\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, d, cfg)
	waitExit(t, d, cfg.ID)
	if got, want := readFile(t, cfg.StdoutPath), "earlier\nout-line\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := readFile(t, cfg.StderrPath), "err-line\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}

func testWaitAfterExit(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, "exit 7", nil)
	start(t, d, cfg)
	first := waitExit(t, d, cfg.ID)
	second := waitExit(t, d, cfg.ID)
	if first.ExitCode != 7 || second.ExitCode != 7 {
		t.Errorf("results = %v and %v, want exit code 7 twice", first, second)
	}
}

func testWaitContextCancel(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, "exec sleep 30", nil)
	start(t, d, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := d.Wait(ctx, cfg.ID)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	cancel()
	select {
	case res, ok := <-ch:
		if ok {
			t.Errorf("Wait delivered %v after cancel, want a closed channel", res)
		}
	case <-time.After(waitLimit):
		t.Fatal("Wait channel not closed after ctx cancel")
	}
}

func testStopGraceful(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, "echo ready; exec sleep 30", nil)
	start(t, d, cfg)
	waitForFile(t, cfg.StdoutPath, "ready")
	begin := time.Now()
	if err := d.Stop(cfg.ID, 5*time.Second, "SIGTERM"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("Stop took %v; a process that dies on SIGTERM should not wait for the timeout", took)
	}
	res := waitExit(t, d, cfg.ID)
	if res.Signal != int(syscall.SIGTERM) || res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("result = %+v, want killed by SIGTERM", res)
	}
}

func testStopCustomSignal(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, `trap 'echo got-int; exit 7' INT; echo ready; while :; do sleep 0.05; done`, nil)
	start(t, d, cfg)
	waitForFile(t, cfg.StdoutPath, "ready")
	if err := d.Stop(cfg.ID, 5*time.Second, "SIGINT"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	res := waitExit(t, d, cfg.ID)
	if res.ExitCode != 7 || res.Signal != 0 {
		t.Errorf("result = %+v, want exit code 7 from the INT trap", res)
	}
	waitForFile(t, cfg.StdoutPath, "got-int")
}

func testStopEscalatesToKill(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, `trap '' TERM; echo ready; while :; do sleep 0.05; done`, nil)
	start(t, d, cfg)
	waitForFile(t, cfg.StdoutPath, "ready")
	const timeout = 300 * time.Millisecond
	begin := time.Now()
	if err := d.Stop(cfg.ID, timeout, ""); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(begin); took < timeout {
		t.Errorf("Stop returned after %v, before the %v timeout", took, timeout)
	}
	res := waitExit(t, d, cfg.ID)
	if res.Signal != int(syscall.SIGKILL) {
		t.Errorf("result = %+v, want killed by SIGKILL", res)
	}
}

func testStopExitedIsNoop(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, "exit 0", nil)
	start(t, d, cfg)
	waitExit(t, d, cfg.ID)
	if err := d.Stop(cfg.ID, time.Second, "SIGTERM"); err != nil {
		t.Errorf("Stop of an exited task: %v, want nil", err)
	}
	if res := waitExit(t, d, cfg.ID); res.ExitCode != 0 {
		t.Errorf("result after Stop = %v, want the original exit code 0", res)
	}
}

func testDestroyKillsGroup(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, `sleep 30 & echo "child=$!"; wait`, nil)
	start(t, d, cfg)
	waitForFile(t, cfg.StdoutPath, "child=")
	line := strings.TrimSpace(strings.TrimPrefix(readFile(t, cfg.StdoutPath), "child="))
	child, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("child pid %q: %v", line, err)
	}
	if err := d.Destroy(cfg.ID); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	deadline := time.Now().Add(waitLimit)
	for processAlive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the destroyed task still runs", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := d.Wait(context.Background(), cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Wait after Destroy: %v, want ErrTaskNotFound", err)
	}
	if err := d.Destroy(cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("second Destroy: %v, want ErrTaskNotFound", err)
	}
}

// processAlive reports whether pid runs (a zombie waiting to be reaped by
// someone else counts as dead).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func testDuplicateID(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, "exec sleep 30", nil)
	start(t, d, cfg)
	if _, err := d.Start(context.Background(), cfg); !errors.Is(err, drivers.ErrTaskExists) {
		t.Errorf("second Start with the same ID: %v, want ErrTaskExists", err)
	}
}

func testUnknownTask(t *testing.T, d drivers.Driver) {
	if _, err := d.Wait(context.Background(), "nope"); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Wait: %v, want ErrTaskNotFound", err)
	}
	if err := d.Stop("nope", time.Second, ""); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Stop: %v, want ErrTaskNotFound", err)
	}
	if err := d.Destroy("nope"); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("Destroy: %v, want ErrTaskNotFound", err)
	}
}

func testInvalidConfig(t *testing.T, d drivers.Driver) {
	cfg := shTask(t, "", nil)
	cfg.Config = map[string]any{"args": []any{"x"}}
	if _, err := d.Start(context.Background(), cfg); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("Start without a command: %v, want ErrInvalidConfig", err)
	}
	if _, err := d.Wait(context.Background(), cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("a task that failed to start is known to the driver: Wait = %v", err)
	}
}
