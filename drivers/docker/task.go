package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/hashicorp/go-hclog"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/logrotate"
)

const sigKill = syscall.SIGKILL

// logDrain bounds how long an exited task's result waits for the rest
// of its output to reach the files.
const logDrain = 5 * time.Second

// retryDelay spaces retries of a broken wait or log stream.
const retryDelay = 500 * time.Millisecond

// task is one container the driver holds. Two goroutines serve it, both
// owned by the task and stopped by shutdown: watch (waits for the exit,
// then publishes result and closes done) and follow (copies the log
// stream into the output files).
type task struct {
	logger      hclog.Logger
	api         *client.Client
	containerID string
	out         *outputs

	ctx      context.Context // ends at shutdown
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	logsDone chan struct{}
	done     chan struct{}
	result   *drivers.ExitResult

	mu   sync.Mutex
	sent map[syscall.Signal]bool // signals the driver delivered
}

func newTask(logger hclog.Logger, api *client.Client, id string, out *outputs) *task {
	ctx, cancel := context.WithCancel(context.Background())
	return &task{
		logger: logger, api: api, containerID: id, out: out,
		ctx: ctx, cancel: cancel,
		logsDone: make(chan struct{}), done: make(chan struct{}),
		sent: map[syscall.Signal]bool{},
	}
}

// run starts the task's goroutines.
func (t *task) run() {
	t.wg.Add(2)
	go func() {
		defer t.wg.Done()
		defer close(t.logsDone)
		t.follow()
	}()
	go func() {
		defer t.wg.Done()
		t.result = t.watch()
		close(t.done)
	}()
}

// shutdown stops the goroutines and waits for them; the output files
// are closed after.
func (t *task) shutdown() {
	t.cancel()
	t.wg.Wait()
	t.out.close()
}

func (t *task) exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// kill delivers sig to the container. A container that is no longer
// running is not an error: Stop then just waits for its result.
func (t *task) kill(sig syscall.Signal) error {
	t.mu.Lock()
	t.sent[sig] = true
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	_, err := t.api.ContainerKill(ctx, t.containerID, client.ContainerKillOptions{Signal: strconv.Itoa(int(sig))})
	if err != nil && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("kill container %s with %v: %w", shortID(t.containerID), sig, err)
	}
	return nil
}

// watch waits until the container stops and returns how it ended.
func (t *task) watch() *drivers.ExitResult {
	code, err := t.waitExit()
	if err != nil {
		return &drivers.ExitResult{ExitCode: -1, Err: err}
	}
	select {
	case <-t.logsDone:
	case <-time.After(logDrain):
		t.logger.Warn("output not drained after exit", "waited", logDrain)
	case <-t.ctx.Done():
	}
	oom := false
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if info, err := t.api.ContainerInspect(ctx, t.containerID, client.ContainerInspectOptions{}); err == nil && info.Container.State != nil {
		oom = info.Container.State.OOMKilled
	}
	return t.exitResult(code, oom)
}

// waitExit blocks until the container is not running, riding out a
// dropped wait stream. It fails when the container disappears or the
// task is shut down before the exit is seen.
func (t *task) waitExit() (int, error) {
	for {
		res := t.api.ContainerWait(t.ctx, t.containerID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		var waitErr error
		select {
		case r := <-res.Result:
			if r.Error == nil || r.Error.Message == "" {
				return int(r.StatusCode), nil
			}
			waitErr = errors.New(r.Error.Message)
		case waitErr = <-res.Error:
		}
		if t.ctx.Err() != nil {
			return 0, errGone
		}
		ctx, cancel := context.WithTimeout(t.ctx, apiTimeout)
		info, err := t.api.ContainerInspect(ctx, t.containerID, client.ContainerInspectOptions{})
		cancel()
		switch {
		case cerrdefs.IsNotFound(err):
			return 0, errGone
		case err == nil && info.Container.State != nil && !info.Container.State.Running:
			return info.Container.State.ExitCode, nil
		}
		t.logger.Warn("container wait broke; retrying", "error", waitErr)
		select {
		case <-t.ctx.Done():
			return 0, errGone
		case <-time.After(retryDelay):
		}
	}
}

// exitResult reads a container exit code. The engine reports a process
// killed by signal n as 128+n; that is taken as a signal only when the
// driver sent that signal (or the kernel OOM-killed it), since a
// program may exit 143 on its own.
func (t *task) exitResult(code int, oom bool) *drivers.ExitResult {
	res := &drivers.ExitResult{ExitCode: code, OOMKilled: oom}
	t.mu.Lock()
	defer t.mu.Unlock()
	if sig := syscall.Signal(code - 128); code > 128 && (t.sent[sig] || (oom && sig == sigKill)) {
		res.Signal = int(sig)
	}
	return res
}

// follow copies the container's log stream into the output files until
// the stream ends with the container, or the task is shut down. A
// broken stream is re-read from the start; the writers drop what the
// files already hold.
func (t *task) follow() {
	for attempt := 0; ; attempt++ {
		t.out.rewind()
		rc, err := t.api.ContainerLogs(t.ctx, t.containerID, client.ContainerLogsOptions{
			ShowStdout: true, ShowStderr: true, Follow: true,
		})
		if err == nil {
			_, err = stdcopy.StdCopy(t.out.stdout, t.out.stderr, rc)
			rc.Close()
			if err == nil {
				return
			}
		}
		if t.ctx.Err() != nil || cerrdefs.IsNotFound(err) || attempt >= 10 {
			return
		}
		t.logger.Warn("log stream broke; retrying", "error", err)
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(retryDelay):
		}
	}
}

// outputs are the task's stdout and stderr files.
type outputs struct {
	stdout, stderr *streamFile
}

func (o *outputs) rewind() {
	o.stdout.pos, o.stderr.pos = 0, 0
}

func (o *outputs) close() {
	o.stdout.close()
	o.stderr.close()
}

// streamFile appends one of the container's streams to a rotated log
// (package drivers/logrotate). base is the log's stream offset (bytes
// ever written, counting rotated-away files) before the container wrote
// to it; consumed counts the stream's bytes already in the log, so a
// stream read again from its start (after a break, or by a new driver)
// skips them.
type streamFile struct {
	f        *logrotate.Writer // nil: output is dropped
	base     int64
	consumed int64
	pos      int64 // position in the stream being read now
}

func (s *streamFile) Write(p []byte) (int, error) {
	n := len(p)
	if skip := s.consumed - s.pos; skip > 0 {
		if skip >= int64(n) {
			s.pos += int64(n)
			return n, nil
		}
		p = p[skip:]
		s.pos += skip
	}
	if s.f != nil {
		if _, err := s.f.Write(p); err != nil {
			return 0, err
		}
	}
	s.pos += int64(len(p))
	s.consumed = s.pos
	return n, nil
}

func (s *streamFile) close() {
	if s.f != nil {
		s.f.Close()
	}
}

// openOutputs opens the task's output logs for a new container.
func openOutputs(cfg *drivers.TaskConfig) (*outputs, error) {
	stdout, err := openStream(cfg.StdoutPath, cfg.LogOptions(), -1)
	if err != nil {
		return nil, err
	}
	stderr, err := openStream(cfg.StderrPath, cfg.LogOptions(), -1)
	if err != nil {
		stdout.close()
		return nil, err
	}
	return &outputs{stdout: stdout, stderr: stderr}, nil
}

// reopenOutputs opens the output logs of a recovered task, skipping
// what its container already wrote there.
func reopenOutputs(h *drivers.TaskHandle) (*outputs, error) {
	cfg := h.Config
	if cfg == nil {
		cfg = &drivers.TaskConfig{}
	}
	stdout, err := openStream(cfg.StdoutPath, cfg.LogOptions(), stateOffset(h, StateStdoutOffset))
	if err != nil {
		return nil, err
	}
	stderr, err := openStream(cfg.StderrPath, cfg.LogOptions(), stateOffset(h, StateStderrOffset))
	if err != nil {
		stdout.close()
		return nil, err
	}
	return &outputs{stdout: stdout, stderr: stderr}, nil
}

// stateOffset reads a stream offset from the handle; 0 when absent.
func stateOffset(h *drivers.TaskHandle, key string) int64 {
	n, err := strconv.ParseInt(h.State[key], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// openStream opens the log at path for appending. base < 0 means a new
// container: the log's current offset is the base. Otherwise what lies
// past base is the container's output already copied.
func openStream(path string, opts logrotate.Options, base int64) (*streamFile, error) {
	if path == "" {
		return &streamFile{}, nil
	}
	w, err := logrotate.Open(path, opts)
	if err != nil {
		return nil, fmt.Errorf("open output: %w", err)
	}
	end := w.Offset()
	s := &streamFile{f: w, base: end}
	if base >= 0 && base <= end {
		s.base, s.consumed = base, end-base
	}
	return s, nil
}
