package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
	"github.com/droverhq/drover/drivers/taskuser"
	"github.com/droverhq/drover/structs"
)

var (
	_ drivers.Driver       = (*Driver)(nil)
	_ drivers.Signaler     = (*Driver)(nil)
	_ drivers.Execer       = (*Driver)(nil)
	_ drivers.Recoverer    = (*Driver)(nil)
	_ drivers.OrphanKiller = (*Driver)(nil)
	_ drivers.TaskKiller   = (*Driver)(nil)
)

// Driver runs exec tasks. The zero value is not usable; call New.
type Driver struct {
	logger hclog.Logger
	cfg    Config

	probeOnce sync.Once
	cgroups   cgroupFS
	isoErr    error // why tasks cannot be isolated; nil when they can

	mu    sync.Mutex
	tasks map[string]*task
}

// New returns an exec driver. logger may be nil. Whether the host can
// isolate tasks is checked on first use and cached.
func New(logger hclog.Logger, cfg Config) *Driver {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Driver{logger: logger.Named(Name), cfg: cfg, tasks: map[string]*task{}}
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// isolation reports why tasks cannot be isolated (nil when they can).
func (d *Driver) isolation() error {
	d.probeOnce.Do(func() {
		d.cgroups, d.isoErr = probeIsolation(d.cfg.CgroupRoot)
		if d.isoErr != nil {
			d.logger.Warn("task isolation unavailable", "reason", d.isoErr, "fallback", d.cfg.AllowFallback)
		}
	})
	return d.isoErr
}

// Fingerprint implements drivers.Driver: healthy when tasks can be
// isolated, or when they cannot but fallback is allowed (the description
// then says isolation is off).
func (d *Driver) Fingerprint(context.Context) *structs.DriverInfo {
	err := d.isolation()
	switch {
	case err == nil:
		return &structs.DriverInfo{Detected: true, Healthy: true, HealthDescription: fmt.Sprintf(
			"Healthy: isolated (cgroup %s at %s with a device filter, pid and mount namespaces, own root)", d.cgroups.version(), d.cgroups.root)}
	case d.cfg.AllowFallback:
		return &structs.DriverInfo{Detected: true, Healthy: true, HealthDescription: fmt.Sprintf(
			"Healthy: isolation off, tasks run like raw_exec: %v", err)}
	default:
		return &structs.DriverInfo{Detected: true, Healthy: false, HealthDescription: fmt.Sprintf(
			"exec: %v; set allow fallback", err)}
	}
}

// Start implements drivers.Driver. It returns once the command runs in
// its cgroup and namespaces (or, in fallback, as a plain process).
func (d *Driver) Start(_ context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, fmt.Errorf("%w: missing task ID", drivers.ErrInvalidConfig)
	}
	command, args, err := parseConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	isoErr := d.isolation()
	if isoErr != nil && !d.cfg.AllowFallback {
		return nil, fmt.Errorf("exec driver: isolation unavailable: %w", isoErr)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[cfg.ID]; ok {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, drivers.ErrTaskExists)
	}
	env := taskEnv(cfg)
	// Isolated, the task has its own root and nobody's way there is
	// made for it; in fallback it needs the host's.
	u, err := taskuser.Prepare(cfg, isoErr != nil)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	spec := launchSpec{cfg: cfg, path: command, args: args, env: env, user: u, isolated: isoErr == nil}
	if spec.isolated {
		spec.cgroups = &d.cgroups
		if err := d.isolate(&spec); err != nil {
			return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
		}
	} else if spec.path, err = resolveCommand(command, env, cfg.TaskDir); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	} else if err := drivers.LinkMounts(cfg.TaskDir, cfg.Mounts); err != nil {
		// Without isolation, volumes are symlinks as with raw_exec.
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	t, err := launch(spec)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	d.tasks[cfg.ID] = t
	go t.wait()
	state := map[string]string{
		statePID: strconv.Itoa(t.pid), stateInitStart: strconv.FormatUint(t.initStart, 10),
		stateStatusFile: t.statusFile, statePIDFile: t.pidFile, stateIsolation: "on", stateBootID: hostexec.BootID(),
	}
	if t.cgroup != nil {
		state["cgroup"] = t.cgroup.memoryDir()
		state[stateCgroups] = strings.Join(t.cgroup.dirs, ":")
	}
	if t.ctlPath != "" {
		state[stateExecSocket] = t.ctlPath
	}
	if isoErr != nil {
		state[stateIsolation] = "off: " + isoErr.Error()
	}
	d.logger.Debug("task started", "task_id", cfg.ID, "pid", t.pid, "command", spec.path, "user", u.Name, "isolation", state["isolation"])
	return &drivers.TaskHandle{ID: cfg.ID, Driver: Name, Config: cfg, StartedAt: time.Now(), State: state}, nil
}

// isolate describes the task's root and devices: the chroot env, the
// task and alloc dirs (and the logs' dirs, which the init reopens by
// path when it rotates them) read-write, the standard devices and the
// nodes of the task's GPUs.
func (d *Driver) isolate(s *launchSpec) error {
	cfg := s.cfg
	gpus := gpuDevices(cfg.DeviceIDs)
	rules, err := deviceRules(gpus)
	if err != nil {
		return err
	}
	rw := []string{cfg.TaskDir, cfg.AllocDir}
	for _, p := range []string{cfg.StdoutPath, cfg.StderrPath} {
		if p != "" && !within(filepath.Dir(p), rw) {
			rw = append(rw, filepath.Dir(p))
		}
	}
	// An MPS slice talks to its GPU's daemon through the pipe dir the
	// client names (the task's env has it too, but the job may write its
	// env: it must not choose a host dir to bind).
	if p := cfg.MPSPipeDir; p != "" && filepath.IsAbs(p) {
		if _, err := os.Stat(p); err == nil && !within(p, rw) {
			rw = append(rw, p)
		}
	}
	dir, err := filepath.EvalSymlinks(cfg.TaskDir)
	if err != nil {
		return fmt.Errorf("task dir: %w", err)
	}
	root, err := newRootSpec(d.cfg.ChrootEnv, dir, rw, gpus)
	if err != nil {
		return err
	}
	if root.Volumes, err = volumeBinds(dir, cfg.Mounts); err != nil {
		return err
	}
	s.root, s.devices = root, rules
	return nil
}

// within reports whether path is one of dirs or inside one.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

func (d *Driver) lookup(taskID string) (*task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.tasks[taskID]
	if !ok {
		return nil, fmt.Errorf("task %s: %w", taskID, drivers.ErrTaskNotFound)
	}
	return t, nil
}

// Wait implements drivers.Driver.
func (d *Driver) Wait(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	t, err := d.lookup(taskID)
	if err != nil {
		return nil, err
	}
	return drivers.WaitProcess(ctx, t.done, func() drivers.ExitResult { return *t.result }), nil
}

// Stop implements drivers.Driver: signal the task's process group (its
// init ignores the signal and reports how the command took it), wait up
// to timeout, then SIGKILL the group, init included, which in a PID
// namespace kills every process of the task.
func (d *Driver) Stop(taskID string, timeout time.Duration, signal string) error {
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	return drivers.StopProcess(d.logger, taskID, t.signal, t.done, sig, timeout)
}

// Signal implements drivers.Signaler: the signal goes to the task's
// process group.
func (d *Driver) Signal(taskID string, signal string) error {
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	return drivers.SignalProcess(taskID, t.signal, sig)
}

// Destroy implements drivers.Driver: kill the task's group, wait for its
// result, then kill whatever is left in its cgroup and remove the cgroup.
func (d *Driver) Destroy(taskID string) error {
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	if _, err := t.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("destroy %s: %w", taskID, err)
	}
	<-t.done
	err = t.release()
	d.mu.Lock()
	delete(d.tasks, taskID)
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("destroy %s: %w", taskID, err)
	}
	return nil
}
