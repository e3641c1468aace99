// Package mps runs NVIDIA's MPS control daemon (nvidia-cuda-mps-control)
// for the GPUs a node shares in mps mode: one daemon per GPU, started when
// the first allocation holding a slice of that GPU starts, stopped when
// the last one ends.
//
// One daemon per GPU rather than one per node: each daemon sees only its
// GPU (CUDA_VISIBLE_DEVICES=<UUID>), so a fault that brings down an MPS
// server takes down the clients of that GPU only, and a task's device
// ordinal 0 is always its GPU (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=...").
// Each daemon has its own directories, Dir/<GPU UUID>/pipe
// (CUDA_MPS_PIPE_DIRECTORY, which the tasks get too) and Dir/<GPU
// UUID>/log (CUDA_MPS_LOG_DIRECTORY).
//
// The daemon runs in the foreground (-f) as the client's child, in a
// process group of its own so that it outlives a client restart like the
// tasks that use it; its PID is kept in Dir/<GPU UUID>/drover-mps.pid,
// and a restarted client adopts a daemon that still runs. It is stopped
// the documented way, "quit" on the control program's standard input,
// then with SIGTERM and SIGKILL if it lingers.
//
// The Manager starts no goroutine: it checks on its daemons when asked
// (Acquire, Release, Close). It knows nothing of allocations beyond the
// holder names it is given, and never runs anything for a simulated GPU
// (the caller does not ask it to).
package mps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultControl is the MPS control program, looked up in PATH.
const DefaultControl = "nvidia-cuda-mps-control"

// Environment variables of the MPS daemon and its clients.
const (
	EnvPipeDirectory          = "CUDA_MPS_PIPE_DIRECTORY"
	EnvLogDirectory           = "CUDA_MPS_LOG_DIRECTORY"
	EnvPinnedDeviceMemLimit   = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
	EnvActiveThreadPercentage = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
	envVisibleDevices         = "CUDA_VISIBLE_DEVICES"
)

// pidFile is where a GPU's daemon PID is kept, next to its directories.
const pidFile = "drover-mps.pid"

// Defaults for Config's zero values.
const (
	DefaultReadyTimeout = 5 * time.Second
	DefaultStopTimeout  = 10 * time.Second
)

// poll is how often a start or stop checks on the daemon.
const poll = 20 * time.Millisecond

// Config configures a Manager.
type Config struct {
	// Dir holds one directory per GPU (the client's data dir/mps).
	Dir string
	// Control is the control program's path or name; "" is DefaultControl.
	Control string
	Logger  hclog.Logger
	// ReadyTimeout bounds the wait for a new daemon's pipes; a daemon
	// still running then is taken as started.
	ReadyTimeout time.Duration
	// StopTimeout bounds the wait for a daemon to quit before SIGTERM.
	StopTimeout time.Duration
}

// Manager starts and stops the MPS daemons of a node's GPUs. It is safe
// for concurrent use.
type Manager struct {
	cfg    Config
	logger hclog.Logger

	mu      sync.Mutex
	daemons map[string]*daemon // by GPU UUID
}

// daemon is one GPU's running control daemon and who holds it.
type daemon struct {
	gpu     string
	pid     int
	child   bool // started by this Manager (else adopted after a restart)
	holders map[string]bool
}

// New returns a Manager; it starts nothing.
func New(cfg Config) *Manager {
	if cfg.Control == "" {
		cfg.Control = DefaultControl
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Manager{cfg: cfg, logger: logger, daemons: map[string]*daemon{}}
}

// Available reports whether the control program can be run: a path that
// is an executable file, or a name found in PATH ("" is DefaultControl).
func Available(control string) bool {
	if control == "" {
		control = DefaultControl
	}
	_, err := exec.LookPath(control)
	return err == nil
}

// PipeDir is the pipe directory of gpu's daemon, whether or not it runs.
func (m *Manager) PipeDir(gpu string) string { return filepath.Join(m.gpuDir(gpu), "pipe") }

// LogDir is the log directory of gpu's daemon.
func (m *Manager) LogDir(gpu string) string { return filepath.Join(m.gpuDir(gpu), "log") }

func (m *Manager) gpuDir(gpu string) string { return filepath.Join(m.cfg.Dir, gpu) }

// Acquire makes sure gpu's daemon runs, starting it (or adopting one a
// previous client left) when none does, records holder as one of its
// users, and returns its pipe directory. Acquiring twice for one holder
// counts once.
func (m *Manager) Acquire(gpu, holder string) (string, error) {
	if gpu == "" || strings.ContainsAny(gpu, `/\`) || gpu == "." || gpu == ".." {
		return "", fmt.Errorf("mps: bad GPU UUID %q", gpu)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.daemons[gpu]
	if d != nil && !d.alive() {
		m.logger.Warn("MPS control daemon exited; starting it again", "gpu", gpu, "pid", d.pid)
		d = nil
	}
	if d == nil {
		var err error
		if d, err = m.adopt(gpu); err == nil && d == nil {
			d, err = m.start(gpu)
		}
		if err != nil {
			delete(m.daemons, gpu)
			return "", fmt.Errorf("mps: GPU %s: %w", gpu, err)
		}
		if prev := m.daemons[gpu]; prev != nil {
			d.holders = prev.holders
		}
		m.daemons[gpu] = d
	}
	d.holders[holder] = true
	return m.PipeDir(gpu), nil
}

// Release drops holder's hold on gpu's daemon and stops the daemon when
// no holder is left. Releasing what is not held does nothing.
func (m *Manager) Release(gpu, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.daemons[gpu]
	if d == nil || !d.holders[holder] {
		return nil
	}
	delete(d.holders, holder)
	if len(d.holders) > 0 {
		return nil
	}
	delete(m.daemons, gpu)
	if err := m.stop(d); err != nil {
		return fmt.Errorf("mps: GPU %s: %w", gpu, err)
	}
	return nil
}

// Running returns the GPUs whose daemon the Manager holds, sorted.
func (m *Manager) Running() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for gpu := range m.daemons {
		out = append(out, gpu)
	}
	slices.Sort(out)
	return out
}

// Close stops every daemon, held or not. A client that leaves its tasks
// running across a restart does not call it: their daemons must stay.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for gpu, d := range m.daemons {
		delete(m.daemons, gpu)
		if err := m.stop(d); err != nil {
			errs = append(errs, fmt.Errorf("mps: GPU %s: %w", gpu, err))
		}
	}
	return errors.Join(errs...)
}

// env is the daemon's environment: the client's, with gpu only and its
// directories.
func (m *Manager) env(gpu string) []string {
	return append(os.Environ(),
		envVisibleDevices+"="+gpu,
		EnvPipeDirectory+"="+m.PipeDir(gpu),
		EnvLogDirectory+"="+m.LogDir(gpu),
	)
}

// start runs the control daemon for gpu in the foreground and waits until
// it is ready.
func (m *Manager) start(gpu string) (*daemon, error) {
	for _, dir := range []string{m.PipeDir(gpu), m.LogDir(gpu)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("start MPS control daemon: %w", err)
		}
	}
	logPath := filepath.Join(m.LogDir(gpu), "drover-control.log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start MPS control daemon: %w", err)
	}
	defer out.Close() // the child keeps its own descriptor
	cmd := exec.Command(m.cfg.Control, "-f")
	cmd.Env = m.env(gpu)
	cmd.Dir = m.gpuDir(gpu)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start MPS control daemon %s: %w", m.cfg.Control, err)
	}
	d := &daemon{gpu: gpu, pid: cmd.Process.Pid, child: true, holders: map[string]bool{}}
	_ = cmd.Process.Release() // the Manager reaps it itself (alive)
	if err := os.WriteFile(filepath.Join(m.gpuDir(gpu), pidFile), []byte(strconv.Itoa(d.pid)+"\n"), 0o644); err != nil {
		m.kill(d)
		return nil, fmt.Errorf("start MPS control daemon: %w", err)
	}
	if err := m.waitReady(d, logPath); err != nil {
		m.kill(d)
		return nil, err
	}
	m.logger.Info("MPS control daemon started", "gpu", gpu, "pid", d.pid, "pipe_dir", m.PipeDir(gpu))
	return d, nil
}

// waitReady waits until the daemon has made its pipes, or has exited (an
// error, with the end of its log), or ReadyTimeout has passed with the
// daemon still running (taken as started).
func (m *Manager) waitReady(d *daemon, logPath string) error {
	deadline := time.Now().Add(m.cfg.ReadyTimeout)
	for {
		if !d.alive() {
			return fmt.Errorf("MPS control daemon exited at start: %s", logTail(logPath))
		}
		for _, marker := range []string{"control", "nvidia-cuda-mps-control.pid"} {
			if _, err := os.Stat(filepath.Join(m.PipeDir(d.gpu), marker)); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			m.logger.Warn("MPS control daemon made no pipes yet; taking it as started", "gpu", d.gpu, "pid", d.pid)
			return nil
		}
		time.Sleep(poll)
	}
}

// adopt returns the daemon a previous client started for gpu when it
// still runs, or nil.
func (m *Manager) adopt(gpu string) (*daemon, error) {
	b, err := os.ReadFile(filepath.Join(m.gpuDir(gpu), pidFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read MPS daemon PID: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return nil, nil
	}
	d := &daemon{gpu: gpu, pid: pid, holders: map[string]bool{}}
	if !d.alive() || !runs(pid, filepath.Base(m.cfg.Control)) {
		return nil, nil
	}
	m.logger.Info("adopted running MPS control daemon", "gpu", gpu, "pid", pid)
	return d, nil
}

// runs reports whether process pid runs a program whose command line
// names prog (a PID file may outlive its process, and the PID be reused).
func runs(pid int, prog string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte(prog))
}

// stop asks the daemon to quit, then signals its process group.
func (m *Manager) stop(d *daemon) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StopTimeout)
	defer cancel()
	quit := exec.CommandContext(ctx, m.cfg.Control)
	quit.Env = m.env(d.gpu)
	quit.Stdin = strings.NewReader("quit\n")
	if out, err := quit.CombinedOutput(); err != nil {
		m.logger.Warn("MPS quit", "gpu", d.gpu, "error", err, "output", strings.TrimSpace(string(out)))
	}
	defer os.Remove(filepath.Join(m.gpuDir(d.gpu), pidFile))
	if d.waitExit(m.cfg.StopTimeout) {
		m.logger.Info("MPS control daemon stopped", "gpu", d.gpu, "pid", d.pid)
		return nil
	}
	m.logger.Warn("MPS control daemon did not quit; terminating it", "gpu", d.gpu, "pid", d.pid)
	if m.kill(d) {
		return nil
	}
	return fmt.Errorf("MPS control daemon %d did not exit", d.pid)
}

// kill sends SIGTERM, then SIGKILL, to the daemon's process group and
// reports whether it exited.
func (m *Manager) kill(d *daemon) bool {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		_ = syscall.Kill(-d.pid, sig)
		if d.waitExit(2 * time.Second) {
			return true
		}
	}
	return false
}

// alive reports whether the daemon runs, reaping it if it is the
// Manager's child and has exited.
func (d *daemon) alive() bool {
	if d.child {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(d.pid, &ws, syscall.WNOHANG, nil)
		return pid == 0 && err == nil
	}
	if err := syscall.Kill(d.pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(d.pid)
}

// zombie reports whether process pid has exited but not been reaped by
// its parent (which, for an adopted daemon, is not this process).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// waitExit polls until the daemon has exited or timeout passes.
func (d *daemon) waitExit(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for d.alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(poll)
	}
	return true
}

// logTail returns the last line or so of a log file, for errors.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = "..." + s[len(s)-400:]
	}
	if s == "" {
		return "no output"
	}
	return s
}
