package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/droverhq/drover/audit"
	"github.com/droverhq/drover/jobspec"
	"github.com/droverhq/drover/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Config is the agent configuration, read from HCL files and flags.
type Config struct {
	Name       string        `hcl:"name,optional"`
	Region     string        `hcl:"region,optional"`
	Datacenter string        `hcl:"datacenter,optional"`
	DataDir    string        `hcl:"data_dir,optional"`
	BindAddr   string        `hcl:"bind_addr,optional"`
	LogLevel   string        `hcl:"log_level,optional"`
	Ports      *PortsConfig  `hcl:"ports,block"`
	Server     *ServerConfig `hcl:"server,block"`
	Client     *ClientConfig `hcl:"client,block"`
	ACL        *ACLConfig    `hcl:"acl,block"`
	Audit      *audit.HCL    `hcl:"audit,block"`
	// TLS is the tls block (config_tls.go).
	TLS *TLSConfig `hcl:"tls,block"`
	// Limits is the limits block (config_limits.go).
	Limits *LimitsConfig `hcl:"limits,block"`
	// Telemetry is the telemetry block (config_telemetry.go).
	Telemetry *TelemetryConfig `hcl:"telemetry,block"`
	// PluginBlocks are the plugin "<name>" blocks, decoded into Plugins
	// (config_safety.go).
	PluginBlocks []*PluginConfig `hcl:"plugin,block"`
	// EnableDebug serves the agent's profiles (/v1/agent/pprof) when
	// ACLs are off, as Nomad's enable_debug; with ACLs on they need
	// agent write whatever it says. On in -dev.
	EnableDebug bool `hcl:"enable_debug,optional"`

	// Plugins is what the plugin blocks set, merged across files.
	Plugins Plugins

	// Set by flags only (untagged fields are ignored by gohcl).
	DevMode bool
	DevGPUs int
}

// ACLConfig is Nomad's acl block: with enabled, every request needs a
// token its policies allow (see `drover acl bootstrap`).
type ACLConfig struct {
	Enabled bool `hcl:"enabled,optional"`
}

// aclEnabled reports whether the acl block turns ACLs on.
func (c *Config) aclEnabled() bool { return c.ACL != nil && c.ACL.Enabled }

// PortsConfig holds the agent's listening ports.
type PortsConfig struct {
	HTTP int `hcl:"http,optional"`
	RPC  int `hcl:"rpc,optional"`
	Serf int `hcl:"serf,optional"`
}

// ServerConfig enables and configures the server.
type ServerConfig struct {
	Enabled         bool `hcl:"enabled,optional"`
	BootstrapExpect int  `hcl:"bootstrap_expect,optional"`
	NumSchedulers   int  `hcl:"num_schedulers,optional"`
	// HeartbeatGrace is how long a node may go silent before it is
	// marked down, e.g. "10s".
	HeartbeatTTL string `hcl:"heartbeat_ttl,optional"`
	// RaftSnapshotThreshold is how many log entries since the last
	// snapshot make Raft take a new one (0: Raft's default, 8192), checked
	// every RaftSnapshotInterval ("120s"); RaftTrailingLogs entries are
	// kept after a snapshot (0: 10240) so slow followers need no snapshot.
	RaftSnapshotThreshold int    `hcl:"raft_snapshot_threshold,optional"`
	RaftSnapshotInterval  string `hcl:"raft_snapshot_interval,optional"`
	RaftTrailingLogs      int    `hcl:"raft_trailing_logs,optional"`
	// ServerJoin lists the other servers' serf addresses to join.
	ServerJoin *ServerJoinConfig `hcl:"server_join,block"`
	// DeadServerTimeout is how long a server may be failed before the
	// leader removes it from Raft, e.g. "10m".
	DeadServerTimeout string `hcl:"dead_server_timeout,optional"`
	// Encrypt is the base64 gossip encryption key (16, 24 or 32 bytes),
	// as `drover operator gossip keyring -generate` prints.
	Encrypt string `hcl:"encrypt,optional"`
	// Garbage collection, in Nomad's names: durations such as "4h"; ""
	// keeps the default (config_gc.go). GCInterval is how often the
	// leader collects ("5m"); JobGCThreshold how long a stopped or dead
	// batch job is kept once all of it finished ("4h"); EvalGCThreshold
	// how long a finished evaluation or allocation is kept ("1h");
	// NodeGCThreshold how long a down node is kept ("24h").
	GCInterval      string `hcl:"gc_interval,optional"`
	JobGCThreshold  string `hcl:"job_gc_threshold,optional"`
	EvalGCThreshold string `hcl:"eval_gc_threshold,optional"`
	NodeGCThreshold string `hcl:"node_gc_threshold,optional"`
	// EventBufferSize is how many Raft indexes' events the server keeps
	// for event stream subscribers to resume from (Nomad's name; 0:
	// 100); EventMaxSubscriptions bounds the open streams (0: 1000).
	EventBufferSize       int `hcl:"event_buffer_size,optional"`
	EventMaxSubscriptions int `hcl:"event_max_subscriptions,optional"`
}

// ClientConfig enables and configures the client.
type ClientConfig struct {
	Enabled      bool                  `hcl:"enabled,optional"`
	Servers      []string              `hcl:"servers,optional"`
	NodeClass    string                `hcl:"node_class,optional"`
	Meta         map[string]string     `hcl:"meta,optional"`
	SimulatedGPU []*SimulatedGPUConfig `hcl:"simulated_gpu,block"`
	// ExecAllowFallback lets the exec driver run tasks without isolation
	// (like raw_exec) where cgroups or namespaces are not permitted.
	ExecAllowFallback bool `hcl:"exec_allow_fallback,optional"`
	// DockerEndpoint overrides DOCKER_HOST for the docker driver.
	DockerEndpoint string `hcl:"docker_endpoint,optional"`
	// DockerUseCDI passes GPUs to containers as CDI device names.
	DockerUseCDI bool `hcl:"docker_use_cdi,optional"`
	// GPUSharing is how the node shares its GPUs (config_sharing.go).
	GPUSharing *GPUSharingConfig `hcl:"gpu_sharing,block"`
	// User is which users exec and raw_exec tasks may run as
	// (config_safety.go).
	User *UserConfig `hcl:"user,block"`
	// ChrootEnv maps host paths to where exec tasks see them (read-only);
	// set, it replaces the default set of system dirs.
	ChrootEnv map[string]string `hcl:"chroot_env,optional"`
	// Garbage collection of finished allocations (config_gc.go), in
	// Nomad's names: every GCInterval ("1m") the client destroys them,
	// oldest first, while it holds more than GCMaxAllocs (50) or its data
	// dir's disk is fuller than GCDiskUsageThreshold percent (80).
	GCInterval           string  `hcl:"gc_interval,optional"`
	GCMaxAllocs          int     `hcl:"gc_max_allocs,optional"`
	GCDiskUsageThreshold float64 `hcl:"gc_disk_usage_threshold,optional"`
	// GPUHistory is the GPU utilisation history the client keeps
	// (config_gpu_history.go).
	GPUHistory *GPUHistoryConfig `hcl:"gpu_history,block"`
	// Networking in Nomad's names (config_network.go): the interface
	// whose address ports bind to, the dynamic port range, and the
	// reserved block's reserved_ports.
	NetworkInterface string          `hcl:"network_interface,optional"`
	MinDynamicPort   int             `hcl:"min_dynamic_port,optional"`
	MaxDynamicPort   int             `hcl:"max_dynamic_port,optional"`
	Reserved         *ReservedConfig `hcl:"reserved,block"`
	// HostVolumes are host dirs jobs may mount (config_host_volume.go).
	HostVolumes []*HostVolumeConfig `hcl:"host_volume,block"`
	// CheckpointRoot holds groups' checkpoint dirs (config_checkpoint.go).
	CheckpointRoot string `hcl:"checkpoint_root,optional"`
	// Artifact bounds artifact downloads (config_artifact.go).
	Artifact *ArtifactConfig `hcl:"artifact,block"`
	// Topology is the node's place in the network (config_topology.go).
	Topology *TopologyConfig `hcl:"topology,block"`
}

// SimulatedGPUConfig declares simulated GPUs, for dev, tests and demos.
type SimulatedGPUConfig struct {
	Count             int    `hcl:"count"`
	Model             string `hcl:"model,optional"`
	Memory            string `hcl:"memory,optional"`
	ComputeCapability string `hcl:"compute_capability,optional"`
}

// DefaultConfig is the base every file and flag is merged onto.
func DefaultConfig() *Config {
	host, _ := os.Hostname()
	return &Config{
		Name:       host,
		Region:     "global",
		Datacenter: "dc1",
		// Loopback unless configured: an agent reachable from the network
		// is a choice (bind_addr = "0.0.0.0").
		BindAddr: "127.0.0.1",
		LogLevel: "INFO",
		Ports:    &PortsConfig{HTTP: 4646, RPC: 4647, Serf: 4648},
		Server:   &ServerConfig{},
		Client:   &ClientConfig{},
		DevGPUs:  4,
	}
}

// DevConfig is the -dev configuration: server and client in one process on
// loopback, simulated GPUs when none are found.
func DevConfig() *Config {
	c := DefaultConfig()
	c.DevMode = true
	c.BindAddr = "127.0.0.1"
	c.LogLevel = "DEBUG"
	c.EnableDebug = true
	c.Server.Enabled = true
	c.Server.BootstrapExpect = 1
	c.Client.Enabled = true
	// As in Nomad's dev mode: raw_exec is on.
	on := true
	c.Plugins.RawExec.Enabled = &on
	return c
}

// ParseConfigFile reads an agent config file. Errors carry file:line,col.
func ParseConfigFile(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read agent config: %w", err)
	}
	return ParseConfig(path, src)
}

// ParseConfig parses agent config HCL. Nesting deeper than the default
// limits.hcl_max_depth is refused first (jobspec.CheckHCLDepth): the
// config is read before its limits block applies. So are number
// literals with huge exponents (checkNumbers).
func ParseConfig(filename string, src []byte) (*Config, error) {
	if err := jobspec.CheckHCLDepth(filename, src, structs.DefaultLimits().HCLMaxDepth); err != nil {
		return nil, err
	}
	if err := checkNumbers(filename, src); err != nil {
		return nil, err
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	var c Config
	if diags := gohcl.DecodeBody(file.Body, nil, &c); diags.HasErrors() {
		return nil, diagError(diags)
	}
	if err := checkGPUSharing(file.Body); err != nil {
		return nil, err
	}
	if err := checkTelemetry(file.Body); err != nil {
		return nil, err
	}
	if err := checkGPUHistory(file.Body); err != nil {
		return nil, err
	}
	plugins, err := decodePlugins(c.PluginBlocks)
	if err != nil {
		return nil, err
	}
	c.Plugins = plugins
	for _, g := range c.Client.orEmpty().SimulatedGPU {
		if g.Memory != "" {
			if _, err := structs.ParseBytes(g.Memory); err != nil {
				return nil, fmt.Errorf("%s: simulated_gpu memory: %w", filename, err)
			}
		}
		if g.Count < 0 {
			return nil, fmt.Errorf("%s: simulated_gpu count %d must not be negative", filename, g.Count)
		}
	}
	return &c, nil
}

func (c *ClientConfig) orEmpty() *ClientConfig {
	if c == nil {
		return &ClientConfig{}
	}
	return c
}

// diagError formats HCL diagnostics as "file:line,col: summary; detail".
func diagError(diags hcl.Diagnostics) error {
	var errs []error
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d,%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

// Merge overlays the set fields of o onto c.
func (c *Config) Merge(o *Config) {
	if o.Name != "" {
		c.Name = o.Name
	}
	if o.Region != "" {
		c.Region = o.Region
	}
	if o.Datacenter != "" {
		c.Datacenter = o.Datacenter
	}
	if o.DataDir != "" {
		c.DataDir = o.DataDir
	}
	if o.BindAddr != "" {
		c.BindAddr = o.BindAddr
	}
	if o.LogLevel != "" {
		c.LogLevel = o.LogLevel
	}
	c.EnableDebug = c.EnableDebug || o.EnableDebug
	if p := o.Ports; p != nil {
		if p.HTTP != 0 {
			c.Ports.HTTP = p.HTTP
		}
		if p.RPC != 0 {
			c.Ports.RPC = p.RPC
		}
		if p.Serf != 0 {
			c.Ports.Serf = p.Serf
		}
	}
	if s := o.Server; s != nil {
		c.Server.Enabled = c.Server.Enabled || s.Enabled
		if s.BootstrapExpect != 0 {
			c.Server.BootstrapExpect = s.BootstrapExpect
		}
		if s.NumSchedulers != 0 {
			c.Server.NumSchedulers = s.NumSchedulers
		}
		if s.HeartbeatTTL != "" {
			c.Server.HeartbeatTTL = s.HeartbeatTTL
		}
		c.Server.mergeRaftSnapshots(s)
		c.Server.mergeCluster(s)
		c.Server.mergeGC(s)
		if s.Encrypt != "" {
			c.Server.Encrypt = s.Encrypt
		}
	}
	if o.TLS != nil {
		c.TLS = o.TLS
	}
	if cl := o.Client; cl != nil {
		c.Client.Enabled = c.Client.Enabled || cl.Enabled
		if len(cl.Servers) > 0 {
			c.Client.Servers = cl.Servers
		}
		if cl.NodeClass != "" {
			c.Client.NodeClass = cl.NodeClass
		}
		if cl.Meta != nil {
			c.Client.Meta = cl.Meta
		}
		if len(cl.SimulatedGPU) > 0 {
			c.Client.SimulatedGPU = cl.SimulatedGPU
		}
		c.Client.ExecAllowFallback = c.Client.ExecAllowFallback || cl.ExecAllowFallback
		c.Client.DockerUseCDI = c.Client.DockerUseCDI || cl.DockerUseCDI
		if cl.DockerEndpoint != "" {
			c.Client.DockerEndpoint = cl.DockerEndpoint
		}
		if cl.GPUSharing != nil {
			c.Client.GPUSharing = cl.GPUSharing
		}
		c.Client.mergeGC(cl)
		c.Client.mergeSafety(cl)
		c.Client.mergeHostVolumes(cl)
		if cl.CheckpointRoot != "" {
			c.Client.CheckpointRoot = cl.CheckpointRoot
		}
		if cl.GPUHistory != nil {
			c.Client.GPUHistory = cl.GPUHistory
		}
		c.Client.mergeNetwork(cl)
		c.Client.mergeTopology(cl)
		if cl.Artifact != nil {
			c.Client.Artifact = cl.Artifact
		}
	}
	if o.ACL != nil {
		c.ACL = o.ACL
	}
	if o.Audit != nil {
		c.Audit = o.Audit
	}
	c.mergeLimits(o.Limits)
	c.mergeTelemetry(o.Telemetry)
	c.Plugins.merge(o.Plugins)
}

// Validate checks the merged config.
func (c *Config) Validate() error {
	var errs []error
	if !c.Server.Enabled && !c.Client.Enabled {
		errs = append(errs, errors.New("agent config: enable the server, the client, or both (-dev)"))
	}
	if c.DataDir == "" && !c.DevMode {
		errs = append(errs, errors.New("agent config: data_dir is required (or use -dev)"))
	}
	if net.ParseIP(c.BindAddr) == nil {
		errs = append(errs, fmt.Errorf("agent config: bind_addr %q is not an IP address", c.BindAddr))
	}
	for name, p := range map[string]int{"http": c.Ports.HTTP, "rpc": c.Ports.RPC, "serf": c.Ports.Serf} {
		if p < 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("agent config: ports.%s %d out of range", name, p))
		}
	}
	if c.Audit != nil && c.Audit.Enabled {
		dir := c.DataDir
		if dir == "" {
			dir = os.TempDir() // -dev: its data dir is made at start
		}
		if _, err := c.Audit.Config(dir); err != nil {
			errs = append(errs, fmt.Errorf("agent config: %w", err))
		}
	}
	errs = append(errs, c.validateCluster()...)
	errs = append(errs, c.Server.validateRaftSnapshots()...)
	errs = append(errs, c.Server.validateGC()...)
	errs = append(errs, c.Client.validateGC()...)
	errs = append(errs, c.Client.validateGPUHistory()...)
	errs = append(errs, c.Client.validateNetwork()...)
	errs = append(errs, c.Client.validateArtifact()...)
	errs = append(errs, c.Client.validateTopology()...)
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.validateLimits()...)
	errs = append(errs, c.validateTelemetry()...)
	errs = append(errs, c.Client.validateSafety()...)
	errs = append(errs, c.Client.validateHostVolumes()...)
	errs = append(errs, c.Client.validateCheckpointRoot()...)
	if c.Client.Enabled && !c.Server.Enabled && len(c.Client.Servers) == 0 {
		errs = append(errs, errors.New("agent config: a client without a local server needs client.servers"))
	}
	return errors.Join(errs...)
}

func (c *Config) addr(port int) string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(port))
}
