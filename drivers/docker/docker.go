// Package docker is the docker task driver: it runs each task as a
// container of the local Docker Engine, through the engine's API
// (github.com/moby/moby/client, API version negotiated, 1.40 and up).
//
// Driver config (see CreateOptions):
//
//	image        = "drover-test/hello:1"   # required; used when present locally, pulled otherwise
//	command      = "/hello"                # first element of the container's command
//	args         = ["a", "b"]              # the rest of it
//	entrypoint   = ["/bin/tini", "--"]
//	labels       { team = "ml" }           # plus the com.droverhq.* labels the driver sets
//	ports        = ["8080:80"]             # "host:container[/proto]"
//	volumes      = ["/data:/data:ro"]      # "host:/container[:ro|rw]"
//	mounts       { type = "bind" source = "/x" target = "/y" readonly = true }
//	network_mode = "host"
//	privileged   = true
//
// Off unless the client's Config allows them (the agent's
// plugin "docker" { config { ... } }): volumes, and mounts of type bind
// or volume (AllowVolumes); privileged (AllowPrivileged); network_mode
// "host" (AllowHostNetwork). A task asking for one is refused with
// drivers.ErrDisabled naming the setting. The task's user
// (TaskConfig.User) is the container's user; "" is the image's.
//
// The task's environment is TaskConfig.Env over the image's own ENV
// (the engine adds HOSTNAME, and HOME when unset); nothing comes from
// the agent's environment. The task dir is not mounted. CPU shares and the
// memory limit come from the task's allocated resources; the assigned
// GPUs (TaskConfig.DeviceIDs) become one device request naming exactly
// those UUIDs, for the NVIDIA runtime or as CDI devices.
//
// Output: a goroutine owned by the task follows the container's log
// stream, splits stdout from stderr and appends each to its log,
// rotated per TaskConfig.LogMaxFiles (package drivers/logrotate).
// Re-attach (RecoverTask) does not lose or repeat output: Start records
// in the handle each log's offset (bytes ever written to it, counting
// files rotated away) before the container wrote to it, so a new driver
// re-reads the container's log from its beginning and skips the bytes
// already written. That holds as long as only this driver appends to
// the logs while the task runs.
//
// Every container carries com.droverhq.* labels (spec.go), among them
// the task's alloc dir on the host (LabelAllocDir): a client that lost
// its state removes, with KillOrphans (drivers.OrphanKiller), the
// containers whose alloc dir is under its own alloc root and that it
// does not re-attach to, and never another client's on the same engine.
// KillTask (drivers.TaskKiller) removes the container a handle names
// when re-attaching to it failed.
//
// Exec sessions (drivers.Execer) are Docker execs in the task's
// container; see exec.go for how one is killed when the caller gives up.
//
// It must not decide restarts or know about allocations: see package
// drivers.
package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/hashicorp/go-hclog"
	"github.com/moby/moby/client"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// Name is the driver's name in job files.
const Name = "docker"

// Keys of TaskHandle.State.
const (
	StateContainerID  = "container_id"
	StateStdoutOffset = "stdout_offset"
	StateStderrOffset = "stderr_offset"
)

// fingerprintTimeout bounds the engine ping of Fingerprint.
const fingerprintTimeout = 2 * time.Second

// apiTimeout bounds single engine calls made outside a caller's ctx
// (kill, remove, inspect).
const apiTimeout = 30 * time.Second

var (
	_ drivers.Driver    = (*Driver)(nil)
	_ drivers.Recoverer = (*Driver)(nil)
	_ drivers.Signaler  = (*Driver)(nil)
	_ drivers.Execer    = (*Driver)(nil)
)

// Config configures the driver.
type Config struct {
	// Endpoint is the engine's address ("unix:///var/run/docker.sock",
	// "tcp://host:2375"); empty means DOCKER_HOST or the default socket.
	Endpoint string
	// UseCDI passes GPUs as CDI devices ("nvidia.com/gpu=<uuid>")
	// instead of device requests for the NVIDIA runtime.
	UseCDI bool
	// KeepFailedContainers leaves a container whose start failed in
	// place (created, labelled com.droverhq.*) for inspection, instead
	// of removing it. For debugging: the driver forgets such containers.
	KeepFailedContainers bool
	// AllowVolumes lets tasks mount host paths and named volumes
	// (volumes, and mounts of type bind or volume); tmpfs mounts are
	// always allowed. Nomad's plugin "docker" volumes.enabled.
	AllowVolumes bool
	// AllowPrivileged lets tasks set privileged = true.
	AllowPrivileged bool
	// AllowHostNetwork lets tasks set network_mode = "host", where they
	// could reach the agent's loopback API.
	AllowHostNetwork bool
}

// Driver runs docker tasks. The zero value is not usable; call New.
type Driver struct {
	logger hclog.Logger
	cfg    Config
	api    *client.Client
	apiErr error // why api is nil

	mu    sync.Mutex
	tasks map[string]*task
}

// New returns a docker driver. It does not contact the engine; a bad
// endpoint shows in Fingerprint and Start. logger may be nil.
func New(logger hclog.Logger, cfg Config) *Driver {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	opts := []client.Opt{client.FromEnv}
	if cfg.Endpoint != "" {
		opts = append(opts, client.WithHost(cfg.Endpoint))
	}
	api, err := client.New(opts...)
	if err != nil {
		err = fmt.Errorf("docker client: %w", err)
	}
	return &Driver{logger: logger.Named(Name), cfg: cfg, api: api, apiErr: err, tasks: map[string]*task{}}
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Client returns the engine client the driver uses, or an error when
// it could not be built. For tests and diagnostics.
func (d *Driver) Client() (*client.Client, error) {
	return d.api, d.apiErr
}

// Close releases the engine client's idle connections. Tasks keep
// running; a later driver can recover them.
func (d *Driver) Close() error {
	if d.api == nil {
		return nil
	}
	return d.api.Close()
}

// Fingerprint implements drivers.Driver: healthy when the engine answers
// a ping within a couple of seconds; not detected otherwise.
func (d *Driver) Fingerprint(ctx context.Context) *structs.DriverInfo {
	if d.apiErr != nil {
		return &structs.DriverInfo{HealthDescription: d.apiErr.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, fingerprintTimeout)
	defer cancel()
	ping, err := d.api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		return &structs.DriverInfo{HealthDescription: fmt.Sprintf("docker engine unreachable: %v", err)}
	}
	desc := "Docker Engine, API " + ping.APIVersion
	if v, err := d.api.ServerVersion(ctx, client.ServerVersionOptions{}); err == nil {
		desc = fmt.Sprintf("Docker Engine %s, API %s", v.Version, d.api.ClientVersion())
	}
	return &structs.DriverInfo{Detected: true, Healthy: true, HealthDescription: desc}
}

// CreateContainer makes sure the task's image is present (pulling it
// only when absent) and creates its container without starting it. It
// returns the container's ID; the driver does not track it. Start uses
// it; tests use it to inspect what a task would get on hosts where it
// could not start (GPU device requests without the NVIDIA runtime).
func (d *Driver) CreateContainer(ctx context.Context, cfg *drivers.TaskConfig) (string, error) {
	if d.apiErr != nil {
		return "", d.apiErr
	}
	if cfg == nil || cfg.ID == "" {
		return "", fmt.Errorf("%w: missing task ID", drivers.ErrInvalidConfig)
	}
	opts, err := CreateOptions(cfg, d.cfg)
	if err != nil {
		return "", err
	}
	if err := d.ensureImage(ctx, opts.Config.Image); err != nil {
		return "", err
	}
	res, err := d.api.ContainerCreate(ctx, opts)
	if err != nil {
		return "", fmt.Errorf("create container for %s: %w", cfg.ID, err)
	}
	for _, w := range res.Warnings {
		d.logger.Warn("container create", "task_id", cfg.ID, "warning", w)
	}
	return res.ID, nil
}

// ensureImage pulls image unless the engine already has it.
func (d *Driver) ensureImage(ctx context.Context, image string) error {
	_, err := d.api.ImageInspect(ctx, image)
	if err == nil {
		return nil
	}
	if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("inspect image %q: %w", image, err)
	}
	d.logger.Info("pulling image", "image", image)
	pull, err := d.api.ImagePull(ctx, image, client.ImagePullOptions{})
	if err == nil {
		err = pull.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("image %q is not present locally and pulling it failed: %w", image, err)
	}
	return nil
}

// Start implements drivers.Driver.
func (d *Driver) Start(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, fmt.Errorf("%w: missing task ID", drivers.ErrInvalidConfig)
	}
	if _, err := parseSpec(cfg.Config); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	// Hold the ID while the container is made, so a concurrent Start of
	// the same ID fails instead of racing for the container name.
	if err := d.reserve(cfg.ID); err != nil {
		return nil, err
	}
	h, err := d.start(ctx, cfg)
	if err != nil {
		d.release(cfg.ID)
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	return h, nil
}

func (d *Driver) start(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	out, err := openOutputs(cfg)
	if err != nil {
		return nil, err
	}
	id, err := d.CreateContainer(ctx, cfg)
	if err != nil {
		out.close()
		return nil, err
	}
	if _, err := d.api.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		out.close()
		if !d.cfg.KeepFailedContainers {
			d.removeContainer(id)
		}
		return nil, fmt.Errorf("start container %s: %w", shortID(id), err)
	}
	t := newTask(d.logger.With("task_id", cfg.ID, "container_id", shortID(id)), d.api, id, out)
	d.mu.Lock()
	d.tasks[cfg.ID] = t
	d.mu.Unlock()
	t.run()
	d.logger.Debug("task started", "task_id", cfg.ID, "container_id", shortID(id))
	return &drivers.TaskHandle{
		ID:        cfg.ID,
		Driver:    Name,
		Config:    cfg,
		StartedAt: time.Now(),
		State: map[string]string{
			StateContainerID:  id,
			StateStdoutOffset: strconv.FormatInt(out.stdout.base, 10),
			StateStderrOffset: strconv.FormatInt(out.stderr.base, 10),
		},
	}, nil
}

// reserve marks id as taken by a task being started (a nil entry).
func (d *Driver) reserve(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[id]; ok {
		return fmt.Errorf("start %s: %w", id, drivers.ErrTaskExists)
	}
	d.tasks[id] = nil
	return nil
}

func (d *Driver) release(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.tasks[id]; ok && t == nil {
		delete(d.tasks, id)
	}
}

// RecoverTask implements drivers.Recoverer: it re-attaches to the
// container named in handle.State and resumes its log streaming where
// the files end. A container that is gone is ErrTaskNotFound.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error {
	if d.apiErr != nil {
		return d.apiErr
	}
	if handle == nil || handle.State[StateContainerID] == "" {
		return fmt.Errorf("%w: handle has no %s", drivers.ErrInvalidConfig, StateContainerID)
	}
	id := handle.State[StateContainerID]
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if _, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("recover %s: container %s: %w", handle.ID, shortID(id), drivers.ErrTaskNotFound)
		}
		return fmt.Errorf("recover %s: inspect container %s: %w", handle.ID, shortID(id), err)
	}
	if err := d.reserve(handle.ID); err != nil {
		return fmt.Errorf("recover %s: %w", handle.ID, drivers.ErrTaskExists)
	}
	out, err := reopenOutputs(handle)
	if err != nil {
		d.release(handle.ID)
		return fmt.Errorf("recover %s: %w", handle.ID, err)
	}
	t := newTask(d.logger.With("task_id", handle.ID, "container_id", shortID(id)), d.api, id, out)
	d.mu.Lock()
	d.tasks[handle.ID] = t
	d.mu.Unlock()
	t.run()
	d.logger.Debug("task recovered", "task_id", handle.ID, "container_id", shortID(id))
	return nil
}

func (d *Driver) lookup(taskID string) (*task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[taskID]
	if t == nil {
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
	ch := make(chan *drivers.ExitResult, 1)
	go func() {
		defer close(ch)
		select {
		case <-t.done:
			ch <- t.result
		case <-ctx.Done():
		}
	}()
	return ch, nil
}

// Signal implements drivers.Signaler.
func (d *Driver) Signal(taskID, signal string) error {
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	return t.kill(sig)
}

// Stop implements drivers.Driver: docker kill with the signal, then
// SIGKILL once timeout passes.
func (d *Driver) Stop(taskID string, timeout time.Duration, signal string) error {
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	if t.exited() {
		return nil
	}
	if err := t.kill(sig); err != nil && !t.exited() {
		return fmt.Errorf("stop %s: %w", taskID, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-t.done:
		return nil
	case <-timer.C:
	}
	if err := t.kill(sigKill); err != nil && !t.exited() {
		return fmt.Errorf("stop %s: %w", taskID, err)
	}
	select {
	case <-t.done:
		return nil
	case <-time.After(apiTimeout):
		return fmt.Errorf("stop %s: container still running %v after SIGKILL", taskID, apiTimeout)
	}
}

// Destroy implements drivers.Driver: it force-removes the container and
// stops the task's goroutines.
func (d *Driver) Destroy(taskID string) error {
	t, err := d.lookup(taskID)
	if err != nil {
		return err
	}
	if err := d.removeContainer(t.containerID); err != nil {
		return fmt.Errorf("destroy %s: %w", taskID, err)
	}
	t.shutdown()
	d.mu.Lock()
	if d.tasks[taskID] == t {
		delete(d.tasks, taskID)
	}
	d.mu.Unlock()
	return nil
}

// removeContainer force-removes a container; one already gone is fine.
func (d *Driver) removeContainer(id string) error {
	return d.removeContainerCtx(context.Background(), id)
}

// removeContainerCtx is removeContainer bounded by ctx (and apiTimeout).
func (d *Driver) removeContainerCtx(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	_, err := d.api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", shortID(id), err)
	}
	return nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// errGone is the result's Err when the container vanished before the
// driver learned how it ended.
var errGone = errors.New("docker: container removed before its exit was seen")
