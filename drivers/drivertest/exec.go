package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
)

// The exec part of the suite: every driver that implements
// drivers.Execer runs it, through Run or, for drivers whose tasks are
// not host shell scripts (docker), through RunExec with a TaskFunc.

// TaskFunc returns the config of a task that runs script with /bin/sh
// and env as its environment, where the commands the exec checks use
// (cat, sleep, stty, and /proc) are in the task's PATH and view.
type TaskFunc func(t *testing.T, script string, env map[string]string) *drivers.TaskConfig

// WithTask makes the exec checks run their tasks as fn builds them,
// instead of as host /bin/sh scripts (raw_exec's and exec's shape). The
// check of the exec'd command's working dir, which is the host task dir
// only for those, is then left out.
func WithTask(fn TaskFunc) Option {
	return func(o *options) { o.task = fn }
}

// RunExec runs only the exec checks of the suite; newDriver must make
// drivers that implement drivers.Execer.
func RunExec(t *testing.T, newDriver func() drivers.Driver, opts ...Option) {
	t.Helper()
	o := newOptions(opts)
	runTests(t, newDriver, o, execTests(o))
}

func execTests(o options) []suiteTest {
	task := o.task
	hostTask := task == nil
	if hostTask {
		task = shTask
	}
	x := &execSuite{task: task, hostTask: hostTask}
	return []suiteTest{
		{"ExecNoGoroutineLeak", x.testNoGoroutineLeak, true},
		{"ExecExitCode", x.testExitCode, false},
		{"ExecStdoutStderr", x.testStdoutStderr, false},
		{"ExecEnv", x.testEnv, false},
		{"ExecStdin", x.testStdin, false},
		{"ExecTTY", x.testTTY, false},
		{"ExecTTYStdinEOF", x.testTTYStdinEOF, false},
		{"ExecResize", x.testResize, false},
		{"ExecCancelKills", x.testCancelKills, false},
		{"ExecTaskStopped", x.testTaskStopped, false},
		{"ExecUnknownTask", x.testUnknownTask, false},
		{"ExecExitedTask", x.testExitedTask, false},
		{"ExecInvalid", x.testInvalid, false},
	}
}

type execSuite struct {
	task     TaskFunc
	hostTask bool
}

// execLimit bounds an exec the suite expects to end on its own.
const execLimit = 20 * time.Second

// running starts a task that runs until destroyed and returns its ID.
func (x *execSuite) running(t *testing.T, d drivers.Driver, env map[string]string) (*drivers.TaskConfig, drivers.Execer) {
	t.Helper()
	e, ok := d.(drivers.Execer)
	if !ok {
		t.Fatalf("%T does not implement drivers.Execer", d)
	}
	cfg := x.task(t, "exec sleep 1000", env)
	start(t, d, cfg)
	return cfg, e
}

// execOut is the outcome of one exec.
type execOut struct {
	res            *drivers.ExecResult
	err            error
	stdout, stderr string
	took           time.Duration
}

// run execs opts.Command (stdout and stderr captured unless set) and
// waits for it, bounded by execLimit.
func run(t *testing.T, e drivers.Execer, id string, opts drivers.ExecOptions) execOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), execLimit)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if opts.Stdout == nil {
		opts.Stdout = &stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = &stderr
	}
	begin := time.Now()
	res, err := e.ExecTask(ctx, id, &opts)
	took := time.Since(begin)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exec %q did not end within %v", opts.Command, execLimit)
	}
	return execOut{res: res, err: err, stdout: stdout.String(), stderr: stderr.String(), took: took}
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// wantCode fails unless the exec succeeded with exit code code.
func (o execOut) wantCode(t *testing.T, code int) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("ExecTask: %v (stdout %q, stderr %q)", o.err, o.stdout, o.stderr)
	}
	if o.res == nil || o.res.ExitCode != code {
		t.Fatalf("ExecTask result = %+v, want exit code %d (stdout %q, stderr %q)", o.res, code, o.stdout, o.stderr)
	}
}

func (x *execSuite) testExitCode(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	tests := []struct {
		name   string
		script string
		code   int
		stdout string
	}{
		{"three", "echo hi; exit 3", 3, "hi\n"},
		{"zero", "echo ok", 0, "ok\n"},
		{"killed", "kill -9 $$", 137, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, e, cfg.ID, drivers.ExecOptions{Command: sh(tt.script)})
			out.wantCode(t, tt.code)
			if out.stdout != tt.stdout {
				t.Errorf("stdout = %q, want %q", out.stdout, tt.stdout)
			}
		})
	}
}

func (x *execSuite) testStdoutStderr(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	out := run(t, e, cfg.ID, drivers.ExecOptions{Command: sh("echo out-line; echo err-line >&2; echo out-2")})
	out.wantCode(t, 0)
	if out.stdout != "out-line\nout-2\n" || out.stderr != "err-line\n" {
		t.Errorf("stdout, stderr = %q, %q, want %q, %q", out.stdout, out.stderr, "out-line\nout-2\n", "err-line\n")
	}
}

func (x *execSuite) testEnv(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, map[string]string{"FOO": "bar", "SPACED": "a b=c"})
	out := run(t, e, cfg.ID, drivers.ExecOptions{Command: sh(`echo "FOO=$FOO"; echo "SPACED=$SPACED"; echo "LEAK=${` + leakVar + `:-unset}"; pwd -P`)})
	out.wantCode(t, 0)
	want := []string{"FOO=bar\n", "SPACED=a b=c\n", "LEAK=unset\n"}
	if x.hostTask {
		want = append(want, evalSymlinks(t, cfg.TaskDir)+"\n")
	}
	for _, w := range want {
		if !strings.Contains(out.stdout, w) {
			t.Errorf("stdout = %q, want it to contain %q", out.stdout, w)
		}
	}
}

func (x *execSuite) testStdin(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	tests := []struct {
		name  string
		stdin io.Reader
		want  string
	}{
		{"lines", strings.NewReader("hello\nworld\n"), "hello\nworld\n"},
		{"no newline", strings.NewReader("partial"), "partial"},
		{"large", strings.NewReader(strings.Repeat("0123456789abcdef", 64<<10)), strings.Repeat("0123456789abcdef", 64<<10)},
		{"nil is EOF", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, e, cfg.ID, drivers.ExecOptions{Command: []string{"cat"}, Stdin: tt.stdin})
			out.wantCode(t, 0)
			if out.stdout != tt.want {
				t.Errorf("stdout = %d bytes %.40q, want %d bytes %.40q", len(out.stdout), out.stdout, len(tt.want), tt.want)
			}
		})
	}
}

func (x *execSuite) testTTY(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	script := `if test -t 0 && test -t 1 && test -t 2; then echo tty; else echo notty; fi; echo to-stderr >&2`
	tests := []struct {
		name   string
		tty    bool
		stdout []string
		stderr string
	}{
		{"tty", true, []string{"tty\r\n", "to-stderr\r\n"}, ""},
		{"pipes", false, []string{"notty\n"}, "to-stderr\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, e, cfg.ID, drivers.ExecOptions{Command: sh(script), TTY: tt.tty})
			out.wantCode(t, 0)
			for _, w := range tt.stdout {
				if !strings.Contains(out.stdout, w) {
					t.Errorf("stdout = %q, want it to contain %q", out.stdout, w)
				}
			}
			if out.stderr != tt.stderr {
				t.Errorf("stderr = %q, want %q", out.stderr, tt.stderr)
			}
		})
	}
}

func (x *execSuite) testTTYStdinEOF(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	tests := []struct {
		name  string
		stdin io.Reader
		want  string
	}{
		{"input", strings.NewReader("via-tty\n"), "via-tty"},
		{"nil is EOF", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// cat exits only when the terminal delivers the end of input.
			out := run(t, e, cfg.ID, drivers.ExecOptions{Command: []string{"cat"}, TTY: true, Stdin: tt.stdin})
			out.wantCode(t, 0)
			if !strings.Contains(out.stdout, tt.want) {
				t.Errorf("stdout = %q, want the input echoed", out.stdout)
			}
		})
	}
}

// syncBuffer is a buffer written by the driver while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until b holds want.
func waitFor(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output never contained %q; got %q", want, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ended is how a background exec ended: its result, and how long after
// the test began waiting for it ExecTask returned.
type ended struct {
	res   *drivers.ExecResult
	err   error
	at    time.Time
	after time.Duration
}

// background runs an exec that the test ends; wait returns how it ended.
func background(e drivers.Execer, id string, opts *drivers.ExecOptions) (cancel context.CancelFunc, wait func() ended) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan ended, 1)
	go func() {
		res, err := e.ExecTask(ctx, id, opts)
		ch <- ended{res: res, err: err, at: time.Now()}
	}()
	return cancel, func() ended {
		asked := time.Now()
		select {
		case r := <-ch:
			r.after = max(r.at.Sub(asked), 0)
			return r
		case <-time.After(execLimit):
			return ended{err: errors.New("ExecTask did not return"), after: execLimit}
		}
	}
}

func (x *execSuite) testResize(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	resize := make(chan drivers.TerminalSize, 1)
	resize <- drivers.TerminalSize{Height: 30, Width: 90} // the initial size
	var out syncBuffer
	cancel, wait := background(e, cfg.ID, &drivers.ExecOptions{
		Command: sh("while :; do stty size; sleep 0.05; done"), TTY: true, Stdout: &out, Resize: resize,
	})
	defer cancel()
	waitFor(t, &out, "30 90\r\n")
	resize <- drivers.TerminalSize{Height: 40, Width: 100}
	waitFor(t, &out, "40 100\r\n")
	cancel()
	if r := wait(); !errors.Is(r.err, context.Canceled) {
		t.Errorf("ExecTask after cancel: %v, want context.Canceled", r.err)
	}
}

func (x *execSuite) testCancelKills(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			// A unique argument names the shell's child in /proc.
			marker := fmt.Sprintf("1000.%06d", time.Now().UnixNano()%1e6)
			var out syncBuffer
			cancel, wait := background(e, cfg.ID, &drivers.ExecOptions{
				Command: sh("sleep " + marker + " & echo started; wait"), TTY: tty, Stdout: &out,
			})
			defer cancel()
			waitFor(t, &out, "started")
			cancel()
			r := wait()
			if !errors.Is(r.err, context.Canceled) {
				t.Fatalf("ExecTask after cancel: %v, want context.Canceled", r.err)
			}
			if r.after > 5*time.Second {
				t.Errorf("ExecTask returned %v after cancel, want promptly", r.after)
			}
			deadline := time.Now().Add(waitLimit)
			for {
				ps := run(t, e, cfg.ID, drivers.ExecOptions{Command: sh("cat /proc/[0-9]*/cmdline")})
				if !strings.Contains(ps.stdout, marker) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the exec'd shell or its child (sleep %s) still runs after cancel (ExecTask: %v); command lines:\n%q", marker, r.err, ps.stdout)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func (x *execSuite) testTaskStopped(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	var out syncBuffer
	cancel, wait := background(e, cfg.ID, &drivers.ExecOptions{Command: sh("echo started; sleep 1000"), Stdout: &out})
	defer cancel()
	waitFor(t, &out, "started")
	if err := d.Stop(cfg.ID, time.Second, "SIGKILL"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if r := wait(); !errors.Is(r.err, drivers.ErrTaskNotRunning) || r.after > 5*time.Second {
		t.Errorf("ExecTask once the task stopped: %v after %v, want ErrTaskNotRunning promptly", r.err, r.after)
	}
}

func (x *execSuite) testUnknownTask(t *testing.T, d drivers.Driver) {
	e, ok := d.(drivers.Execer)
	if !ok {
		t.Fatalf("%T does not implement drivers.Execer", d)
	}
	_, err := e.ExecTask(context.Background(), "nope", &drivers.ExecOptions{Command: []string{"true"}})
	if !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("ExecTask in an unknown task: %v, want ErrTaskNotFound", err)
	}
}

func (x *execSuite) testExitedTask(t *testing.T, d drivers.Driver) {
	e, ok := d.(drivers.Execer)
	if !ok {
		t.Fatalf("%T does not implement drivers.Execer", d)
	}
	cfg := x.task(t, "exit 0", nil)
	start(t, d, cfg)
	waitExit(t, d, cfg.ID)
	_, err := e.ExecTask(context.Background(), cfg.ID, &drivers.ExecOptions{Command: []string{"true"}})
	if !errors.Is(err, drivers.ErrTaskNotRunning) {
		t.Errorf("ExecTask in an exited task: %v, want ErrTaskNotRunning", err)
	}
}

func (x *execSuite) testInvalid(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	tests := []struct {
		name string
		opts *drivers.ExecOptions
	}{
		{"nil options", nil},
		{"no command", &drivers.ExecOptions{}},
		{"empty argv0", &drivers.ExecOptions{Command: []string{"", "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := e.ExecTask(context.Background(), cfg.ID, tt.opts); !errors.Is(err, drivers.ErrInvalidConfig) {
				t.Errorf("ExecTask: %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// testNoGoroutineLeak runs every kind of session (pipes, TTY, stdin,
// resize, cancel) and checks that the goroutines they started end. It
// runs alone (the suite's parallel tests wait), and ignores the HTTP
// client's idle connections (docker).
func (x *execSuite) testNoGoroutineLeak(t *testing.T, d drivers.Driver) {
	cfg, e := x.running(t, d, nil)
	run(t, e, cfg.ID, drivers.ExecOptions{Command: sh("true")}).wantCode(t, 0) // warm up
	before := goroutines()
	resize := make(chan drivers.TerminalSize, 1)
	resize <- drivers.TerminalSize{Height: 10, Width: 20}
	run(t, e, cfg.ID, drivers.ExecOptions{Command: sh("echo a; echo b >&2; exit 2")}).wantCode(t, 2)
	run(t, e, cfg.ID, drivers.ExecOptions{Command: []string{"cat"}, Stdin: strings.NewReader("x\n")}).wantCode(t, 0)
	run(t, e, cfg.ID, drivers.ExecOptions{Command: []string{"cat"}, TTY: true, Stdin: strings.NewReader("y\n"), Resize: resize}).wantCode(t, 0)
	var out syncBuffer
	stdinR, stdinW := io.Pipe() // a stdin that blocks until closed
	cancel, wait := background(e, cfg.ID, &drivers.ExecOptions{Command: sh("echo started; exec sleep 1000"), TTY: true, Stdin: stdinR, Stdout: &out, Resize: make(chan drivers.TerminalSize)})
	waitFor(t, &out, "started")
	cancel()
	if r := wait(); !errors.Is(r.err, context.Canceled) {
		t.Errorf("ExecTask after cancel: %v, want context.Canceled", r.err)
	}
	stdinW.Close() // as the caller must, for a Stdin that blocks
	deadline := time.Now().Add(waitLimit)
	for {
		leaked := newGoroutines(before, goroutines())
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after the sessions ended:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// goroutines returns the stack of every goroutine by its header line
// ("goroutine N [state]:" without the state).
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, " [")
		out[head] = g
	}
	return out
}

// newGoroutines lists the goroutines of after not in before, except the
// HTTP client's connection pool.
func newGoroutines(before, after map[string]string) []string {
	var out []string
	for id, stack := range after {
		if _, ok := before[id]; ok || strings.Contains(stack, "net/http.(*persistConn)") || strings.Contains(stack, "testing.(*T).Run") {
			continue
		}
		out = append(out, stack)
	}
	return out
}
