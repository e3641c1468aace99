// Package client is Drover's node agent: it fingerprints the host (CPU,
// memory, OS, GPUs, task drivers), registers the node with the servers,
// heartbeats, long-polls for the node's allocations, runs each one with an
// alloc runner, and batches their status back to the servers.
//
// It talks to servers only over the wire: one yamux session to a server
// (rpc.go) carrying its msgpack net/rpc calls, on which the servers open
// streams of their own for client operations on its allocations (logs,
// files, exec, stats, restart, signal: ops.go), so it is reachable behind
// NAT. It never imports server packages. It does not decide placement or
// restarts beyond a group's restart policy.
//
// Shutdown stops the loops and, unless Config.LeaveTasksRunning is set,
// kills the tasks it runs, so a dev agent that exits leaves no orphans.
// Every allocation's state and its running tasks' driver handles are
// kept in DataDir/client/state.db (package client/state); a client
// started again on the same DataDir restores its alloc runners from it
// before it asks the servers for work, re-attaching to the tasks that
// are still running (drivers.Recoverer) instead of starting them again.
// A damaged state file is moved aside and replaced by an empty one, and
// every task left running that no stored handle names is killed through
// drivers.OrphanKiller (crashsafe.go), so no task holds GPUs the servers
// think free; the servers' allocations then run again.
package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/client/allocrunner"
	"github.com/droverhq/drover/client/devices/sharing"
	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/client/gpuhistory"
	"github.com/droverhq/drover/client/mps"
	"github.com/droverhq/drover/client/services"
	"github.com/droverhq/drover/client/state"
	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/drivers/taskuser"
	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/tlsconf"
)

// Defaults for Config's zero values.
const (
	DefaultDatacenter     = "dc1"
	DefaultRegion         = "global"
	DefaultUpdateInterval = 200 * time.Millisecond
	DefaultRetryInterval  = time.Second
	DefaultMaxQueryTime   = 5 * time.Minute
	DefaultHeartbeatTTL   = 10 * time.Second
	DefaultRPCTimeout     = 10 * time.Second
	maxRetryInterval      = 30 * time.Second
	finalFlushTimeout     = 2 * time.Second
	finalFlushRetry       = 50 * time.Millisecond
)

// Config configures a client.
type Config struct {
	Name, Datacenter, Region, NodeClass string
	// DataDir holds the node's identity and the alloc dirs
	// (DataDir/alloc/<allocID>/...).
	DataDir string
	// Servers are the servers' RPC addresses ("ip:port"), tried in order.
	Servers []string
	// HTTPAddr is this agent's HTTP address, reported on the node.
	HTTPAddr string
	Meta     map[string]string
	// Topology is the node's place in the network, reported as the
	// attributes topology.block, .rack and .spine (nil: none).
	Topology *structs.NodeTopology
	// SimulatedGPUs are added to the GPUs NVML finds.
	SimulatedGPUs []simulated.Config
	// GPUSharing is how the node lets allocations share its GPUs (the
	// agent's gpu_sharing block); MPSControl is the MPS control program
	// ("" is nvidia-cuda-mps-control in PATH).
	GPUSharing sharing.Policy
	MPSControl string
	// DevMode with no GPU found and none simulated simulates DevGPUs GPUs
	// (DevGPUModel).
	DevMode bool
	DevGPUs int
	Logger  hclog.Logger
	// Network is the node's address and port ranges (network.go).
	Network NetworkConfig

	// LeaveTasksRunning makes Shutdown leave tasks running instead of
	// killing them; a client started again on the same DataDir
	// re-attaches to them.
	LeaveTasksRunning bool
	// NVML is the NVIDIA library; nil loads the host's (nvml.New()).
	NVML nvml.Interface
	// Drivers are the task drivers. nil is a raw_exec driver, enabled:
	// a default for tests and programs that embed the client; the agent
	// always passes its own set, with raw_exec off unless configured.
	Drivers map[string]drivers.Driver
	// Users is which users tasks may run as (the agent's client.user
	// block); the zero value refuses root to exec and raw_exec tasks.
	Users UserPolicy
	// ArtifactMaxSize and ArtifactTimeout bound each artifact download
	// (0: the defaults, 1 GiB and 30 minutes).
	ArtifactMaxSize int64
	ArtifactTimeout time.Duration
	// UpdateInterval is how often allocation updates are batched to the
	// servers; 0 is DefaultUpdateInterval.
	UpdateInterval time.Duration
	// RetryInterval is the first wait after a failed RPC, doubled up to
	// 30s; 0 is DefaultRetryInterval.
	RetryInterval time.Duration
	// MaxQueryTime bounds one blocking allocation query; 0 is
	// DefaultMaxQueryTime.
	MaxQueryTime time.Duration
	// RPCTimeout is how long the client waits for a server's answer
	// (beyond MaxQueryTime for a blocking query) before it gives up on
	// that server and tries the next; 0 is DefaultRPCTimeout.
	RPCTimeout time.Duration
	// TLS, when set, dials the servers over mutual TLS
	// (structs.RPCTypeTLS), verifying their certificates; nil:
	// plaintext.
	TLS *tlsconf.Configurator
	// GCInterval is how often finished allocations are collected;
	// GCMaxAllocs and GCDiskUsageThreshold (percent of the data dir's file
	// system) are what makes the client destroy them, oldest first (gc.go).
	// 0: DefaultGCInterval, DefaultGCMaxAllocs, DefaultGCDiskUsageThreshold.
	GCInterval           time.Duration
	GCMaxAllocs          int
	GCDiskUsageThreshold float64
	// GPUHistory is how often GPUs are sampled, how long their history
	// is kept and the idle-allocation window (gpu_history.go); zero
	// fields take the structs defaults.
	GPUHistory gpuhistory.Config
	// HostVolumes are the host volumes the client offers (the agent's
	// client { host_volume "name" { path read_only } } blocks), by name;
	// reported on the node and mounted into tasks (host_volumes.go).
	HostVolumes map[string]*structs.ClientHostVolumeConfig
	// CheckpointRoot holds the checkpoint dirs of groups with a
	// checkpoint block (allocrunner/checkpoint.go); "" in dev mode is
	// DataDir/checkpoints, otherwise such groups' tasks fail setup.
	CheckpointRoot string
	// ChecksHealth, when set, tells deployments whether an allocation's
	// service checks pass (health_check = "checks"; deployment_health.go).
	ChecksHealth ChecksHealth
}

// UserPolicy is which users exec and raw_exec tasks may run as; see
// allocrunner.UserPolicy.
type UserPolicy = allocrunner.UserPolicy

// Client is a running node agent.
type Client struct {
	cfg     Config
	logger  hclog.Logger
	drivers map[string]drivers.Driver
	rpc     *rpcPool
	db      *state.DB
	lock    *os.File     // the data dir's lock, held while the client runs
	mps     *mps.Manager // MPS daemons of GPUs shared in mps mode

	history *gpuhistory.Recorder // GPU utilisation (gpu_history.go)
	// services registers the allocations' services and runs their
	// checks (services.go).
	services *services.Manager

	nodeMu sync.Mutex
	node   *structs.Node

	allocMu sync.Mutex
	runners map[string]*runner
	// sweepFailed is set when the orphan sweep at start (crashsafe.go)
	// failed for some driver: a task may still run in an alloc dir of no
	// allocation, and its pid file is what the next sweep finds it by, so
	// such dirs are kept. Set before the loops start.
	sweepFailed bool
	// reconciled is set once the runners follow the servers' list of
	// allocations (reconcile ran once); guarded by allocMu.
	reconciled bool
	// trashKick wakes gcLoop to remove the dirs destroyLocked moved to
	// the trash (gc.go).
	trashKick chan struct{}
	// settled holds allocations without a runner that reconcile must not
	// report as stopped before they ran: reported so once already, or run
	// here and destroyed (allocs.go, gc.go). Guarded by allocMu; an ID
	// goes when the servers stop listing it.
	settled map[string]bool

	updMu   sync.Mutex
	pending map[string]*structs.Allocation

	registered   chan struct{} // closed after the first registration
	registerOnce sync.Once

	cancel       context.CancelFunc
	loops        sync.WaitGroup // register/heartbeat, watch
	stopUpdater  context.CancelFunc
	updaterDone  chan struct{}
	shutdownOnce sync.Once
}

// runner is an allocation the client runs.
type runner struct {
	ar          *allocrunner.AllocRunner
	modifyIndex uint64
	desired     string
	// serverTerminal is set once the servers list the allocation as
	// terminal; finishedAt is when garbage collection first found its
	// tasks dead (gc.go). Both are guarded by allocMu.
	serverTerminal bool
	finishedAt     time.Time
	// dropped is set once the servers no longer list the allocation: it
	// is destroyed as soon as its tasks are dead.
	dropped bool
	// health decides the allocation's deployment health (nil: none to
	// decide; deployment_health.go).
	health *healthTracker
}

// NewClient fingerprints the node and starts the register, heartbeat,
// allocation-watch and update loops.
func NewClient(cfg *Config) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("client: missing config")
	}
	c := &Client{
		cfg:         *cfg,
		runners:     map[string]*runner{},
		trashKick:   make(chan struct{}, 1),
		settled:     map[string]bool{},
		pending:     map[string]*structs.Allocation{},
		registered:  make(chan struct{}),
		updaterDone: make(chan struct{}),
	}
	c.applyDefaults()
	if c.cfg.DataDir == "" {
		return nil, errors.New("client: missing data dir")
	}
	if err := validGPUHistory(c.cfg.GPUHistory); err != nil {
		return nil, err
	}
	c.history = gpuhistory.New(c.cfg.GPUHistory)
	if err := os.MkdirAll(c.cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("client: data dir: %w", err)
	}
	c.checkTaskReach()
	lock, err := lockDataDir(c.cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c.lock = lock
	started := false
	defer func() {
		if !started {
			_ = lock.Close()
		}
	}()
	db, err := c.openState()
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c.db = db
	c.mps = mps.New(mps.Config{Dir: filepath.Join(c.cfg.DataDir, "mps"), Control: c.cfg.MPSControl, Logger: c.logger.Named("mps")})
	ctx, cancel := context.WithCancel(context.Background())
	node, err := c.buildNode(ctx)
	if err != nil {
		cancel()
		db.Close()
		return nil, fmt.Errorf("client: fingerprint: %w", err)
	}
	c.node = node
	c.cancel = cancel
	c.rpc = newRPCPool(c.cfg.Servers, c.cfg.RPCTimeout, c.logger)
	c.rpc.tls = c.cfg.TLS
	c.rpc.onStream = c.serveStream // client operations (ops.go)
	c.services = c.newServices()   // before the runners report (services.go)
	total, _ := node.GPUCount()
	c.logger.Info("client started", "node_id", node.ID, "name", node.Name, "gpus", total, "servers", c.cfg.Servers)
	c.restoreRunners()

	c.loops.Add(4)
	go func() { defer c.loops.Done(); c.services.Run(ctx) }()
	go func() { defer c.loops.Done(); c.heartbeatLoop(ctx) }()
	go func() { defer c.loops.Done(); c.watchAllocs(ctx) }()
	go func() { defer c.loops.Done(); c.gcLoop(ctx) }()
	c.startHealthWatcher(ctx) // GPU health events (health.go)
	c.startGPUHistory(ctx)    // GPU utilisation history (gpu_history.go)
	updCtx, stopUpdater := context.WithCancel(context.Background())
	c.stopUpdater = stopUpdater
	go c.updateLoop(updCtx)
	started = true
	return c, nil
}

func (c *Client) applyDefaults() {
	cfg := &c.cfg
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	c.logger = cfg.Logger
	if cfg.Datacenter == "" {
		cfg.Datacenter = DefaultDatacenter
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.UpdateInterval <= 0 {
		cfg.UpdateInterval = DefaultUpdateInterval
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.MaxQueryTime <= 0 {
		cfg.MaxQueryTime = DefaultMaxQueryTime
	}
	if cfg.RPCTimeout <= 0 {
		cfg.RPCTimeout = DefaultRPCTimeout
	}
	if cfg.GCInterval <= 0 {
		cfg.GCInterval = DefaultGCInterval
	}
	if cfg.GCMaxAllocs <= 0 {
		cfg.GCMaxAllocs = DefaultGCMaxAllocs
	}
	if cfg.GCDiskUsageThreshold <= 0 {
		cfg.GCDiskUsageThreshold = DefaultGCDiskUsageThreshold
	}
	c.drivers = cfg.Drivers
	if c.drivers == nil {
		c.drivers = map[string]drivers.Driver{rawexec.Name: rawexec.NewWithConfig(c.logger, rawexec.Config{Enabled: true})}
	}
}

// checkTaskReach warns when tasks running as nobody (the exec and
// raw_exec default) cannot reach the data dir, where their dirs are:
// their drivers would refuse to start them.
func (c *Client) checkTaskReach() {
	if os.Geteuid() != 0 {
		return // tasks run as the agent's own user
	}
	u, err := taskuser.Lookup(taskuser.Default)
	if err != nil {
		return
	}
	if err := u.CheckReach(c.cfg.DataDir); err != nil {
		c.logger.Warn("exec and raw_exec tasks cannot reach their dirs", "error", err)
	}
}

// NodeID returns the node's ID, stable across restarts with the same
// DataDir.
func (c *Client) NodeID() string {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	return c.node.ID
}

// Node returns a copy of the node as the client registers it.
func (c *Client) Node() *structs.Node {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	return c.node.Copy()
}

// Shutdown stops the loops, kills the running tasks (or, with
// LeaveTasksRunning, detaches from them once their handles are saved),
// sends their final status if a server answers, and closes the server
// connection. It waits for tasks to die, which takes at most their kill
// timeouts.
func (c *Client) Shutdown() error {
	c.shutdownOnce.Do(func() {
		c.cancel()
		c.loops.Wait()
		c.allocMu.Lock()
		runners := make([]*runner, 0, len(c.runners))
		for _, r := range c.runners {
			runners = append(runners, r)
		}
		c.allocMu.Unlock()
		for _, r := range runners {
			if c.cfg.LeaveTasksRunning {
				// Saved handles let the next client re-attach. Detach
				// waits for a start in progress (an image pull, say),
				// so all of them wait at once.
				go r.ar.Detach()
			} else {
				r.ar.KillAll("client shutting down") // poststop tasks do not run
			}
		}
		for _, r := range runners {
			<-r.ar.WaitCh()
		}
		if !c.cfg.LeaveTasksRunning {
			if err := c.mps.Close(); err != nil {
				c.logger.Warn("stopping MPS daemons", "error", err)
			}
		}
		c.stopUpdater()
		<-c.updaterDone
		c.rpc.close()
		if err := c.db.Close(); err != nil {
			c.logger.Warn("closing client state", "error", err)
		}
		_ = c.lock.Close() // releases the data dir
		c.logger.Info("client stopped")
	})
	return nil
}

// LogPath returns the current log file of a task: the file may not exist
// yet if the task has not started.
func (c *Client) LogPath(allocID, task string, stderr bool) (string, error) {
	for _, part := range []string{allocID, task} {
		if part == "" || part == "." || part == ".." || strings.ContainsAny(part, `/\`) {
			return "", fmt.Errorf("log path: bad allocation or task name %q: %w", part, structs.ErrInvalid)
		}
	}
	c.allocMu.Lock()
	r := c.runners[allocID]
	c.allocMu.Unlock()
	if r != nil {
		return r.ar.LogPath(task, stderr)
	}
	return allocrunner.LogPath(allocrunner.AllocDir(c.cfg.DataDir, allocID), task, stderr), nil
}

// heartbeatLoop registers the node (retrying until it succeeds), then
// heartbeats at about TTL/2, re-registering when the servers no longer
// know the node.
func (c *Client) heartbeatLoop(ctx context.Context) {
	for first := true; ctx.Err() == nil; first = false {
		ttl, ok := c.registerUntilDone(ctx)
		if !ok {
			return
		}
		c.registerOnce.Do(func() { close(c.registered) })
		if !first {
			c.services.Reregister() // the servers had forgotten the node (services.go)
		}
		c.heartbeatUntilUnknown(ctx, ttl)
	}
}

func (c *Client) registerUntilDone(ctx context.Context) (time.Duration, bool) {
	retry := c.cfg.RetryInterval
	for {
		node := c.Node()
		req := &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{Region: c.cfg.Region}}
		var resp structs.NodeUpdateResponse
		err := c.rpc.call(ctx, structs.RPCNodeRegister, req, &resp)
		if err == nil {
			c.rpc.addServers(resp.Servers)
			c.logger.Info("node registered", "node_id", node.ID, "heartbeat_ttl", resp.HeartbeatTTL)
			return ttlOrDefault(resp.HeartbeatTTL), true
		}
		if ctx.Err() != nil {
			return 0, false
		}
		c.logger.Warn("node registration; retrying", "error", err, "retry_in", retry)
		if !sleep(ctx, retry) {
			return 0, false
		}
		retry = min(retry*2, maxRetryInterval)
	}
}

// heartbeatUntilUnknown heartbeats until ctx ends or the servers answer
// that they do not know the node.
func (c *Client) heartbeatUntilUnknown(ctx context.Context, ttl time.Duration) {
	wait := heartbeatInterval(ttl)
	lastBeat := time.Now()
	for sleep(ctx, wait) {
		req := &structs.NodeUpdateStatusRequest{
			NodeID:       c.NodeID(),
			SecretID:     c.Node().SecretID,
			Status:       structs.NodeStatusReady,
			UpdatedAt:    time.Now().UnixNano(),
			WriteRequest: structs.WriteRequest{Region: c.cfg.Region},
		}
		var resp structs.NodeUpdateResponse
		// A beat that waits long for its answer would let the TTL run
		// out: give up early enough to try another server in time.
		err := c.rpc.callWithin(ctx, min(c.cfg.RPCTimeout, ttl/4), structs.RPCNodeUpdateStatus, req, &resp)
		switch {
		case err == nil:
			c.rpc.addServers(resp.Servers)
			if time.Since(lastBeat) > ttl {
				// The node may have been marked down meanwhile, which drops
				// its service registrations (services.go).
				c.services.Reregister()
			}
			lastBeat = time.Now()
			ttl = ttlOrDefault(resp.HeartbeatTTL)
			wait = heartbeatInterval(ttl)
		case ctx.Err() != nil:
			return
		case errors.Is(err, structs.ErrUnknownNode):
			c.logger.Warn("servers do not know this node; registering again")
			return
		default:
			wait = min(c.cfg.RetryInterval, heartbeatInterval(ttl))
			c.logger.Warn("heartbeat; retrying", "error", err, "retry_in", wait)
		}
	}
}

func ttlOrDefault(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return DefaultHeartbeatTTL
	}
	return ttl
}

// heartbeatInterval is TTL/2 less up to TTL/10 of jitter, so a fleet does
// not heartbeat in lockstep and each beat lands well inside the TTL.
func heartbeatInterval(ttl time.Duration) time.Duration {
	jitter := time.Duration(rand.Int64N(int64(ttl/10) + 1))
	return ttl/2 - jitter
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
