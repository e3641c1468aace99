package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/audit"
	"github.com/droverhq/drover/client"
	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/docker"
	"github.com/droverhq/drover/drivers/exec"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/server"
	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/telemetry"
	"github.com/droverhq/drover/tlsconf"
	"github.com/hashicorp/go-hclog"
)

// Agent is a running server and/or client with its HTTP API.
type Agent struct {
	config  *Config
	logger  hclog.Logger
	dataDir string
	tempDir bool
	// tls holds the tls block's files (nil without TLS); Reload reads
	// them again.
	tls *tlsconf.Configurator

	server *server.Server
	client *client.Client
	// telemetry is the agent's metrics; the server's and the client's
	// collectors join it.
	telemetry *telemetry.Telemetry
	http      *http.Server
	httpAddr  net.Addr
	httpDone  chan struct{}
	audit     *audit.Log
}

// NewAgent starts the configured parts. On error, what was started is
// stopped again.
func NewAgent(cfg *Config, logOut io.Writer) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// An intercept logger, so that /v1/agent/monitor can add a sink of
	// its own for the length of a request.
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:   "drover",
		Level:  hclog.LevelFromString(cfg.LogLevel),
		Output: logOut,
	})
	a := &Agent{config: cfg, logger: logger, dataDir: cfg.DataDir, httpDone: make(chan struct{})}
	warnInsecure(cfg, logger)
	started := false
	defer func() {
		if !started {
			_ = a.Shutdown() // what was started, on the agent started so far
		}
	}()
	tlsc, err := cfg.tlsConfigurator()
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	a.tls = tlsc
	if a.telemetry, err = telemetry.New(cfg.telemetryConfig()); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if a.dataDir == "" {
		dir, err := os.MkdirTemp("", "drover-dev-")
		if err != nil {
			return nil, fmt.Errorf("dev data dir: %w", err)
		}
		// Searchable (not listable) by others: tasks run as nobody.
		if err := os.Chmod(dir, 0o711); err != nil {
			return nil, fmt.Errorf("dev data dir: %w", err)
		}
		a.dataDir, a.tempDir = dir, true
	}
	if cfg.Client.Enabled {
		// Made before the server's (0700) parts: exec and raw_exec tasks
		// run as nobody and must pass through to their dirs. An existing
		// data dir keeps its mode; the client warns if tasks cannot pass.
		if err := os.MkdirAll(a.dataDir, 0o711); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
	}
	if cfg.Server.Enabled {
		if err := a.startServer(); err != nil {
			return nil, err
		}
	}
	// The HTTP listener comes before the client so the client can report
	// its real address when the configured port is 0.
	ln, err := net.Listen("tcp", cfg.addr(cfg.Ports.HTTP))
	if err != nil {
		return nil, listenFailure(cfg.addr(cfg.Ports.HTTP), err)
	}
	a.httpAddr = ln.Addr()
	if cfg.httpTLS() {
		ln = tls.NewListener(ln, a.tls.IncomingHTTP())
	}
	if cfg.Client.Enabled {
		if err := a.startClient(); err != nil {
			ln.Close()
			return nil, err
		}
	}
	api := newHTTPAPI(a, logger.Named("http"))
	api.aclEnabled = cfg.aclEnabled()
	api.limits, _ = cfg.limits() // Validate checked the block
	api.telemetry = a.telemetry
	api.logSinks = logger
	api.enableDebug = cfg.EnableDebug
	if cfg.Audit != nil && cfg.Audit.Enabled {
		acfg, err := cfg.Audit.Config(a.dataDir)
		if err != nil {
			ln.Close()
			return nil, err
		}
		if api.audit, err = audit.New(acfg, nil); err != nil {
			ln.Close()
			return nil, err
		}
		a.audit = api.audit
	}
	a.http = &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		// TLS handshake failures and the like, in the agent's log.
		ErrorLog: logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	go func() {
		defer close(a.httpDone)
		if err := a.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http server stopped", "error", err)
		}
	}()
	started = true
	logger.Info("agent started", "http", a.HTTPURL(), "server", cfg.Server.Enabled, "client", cfg.Client.Enabled, "data_dir", a.dataDir)
	return a, nil
}

func (a *Agent) startServer() error {
	rpcAddr, err := net.ResolveTCPAddr("tcp", a.config.addr(a.config.Ports.RPC))
	if err != nil {
		return fmt.Errorf("rpc address: %w", err)
	}
	ttl := time.Duration(0)
	if v := a.config.Server.HeartbeatTTL; v != "" {
		if ttl, err = time.ParseDuration(v); err != nil {
			return fmt.Errorf("server heartbeat_ttl %q: %w", v, err)
		}
	}
	snapshotInterval, err := a.config.Server.raftSnapshotInterval()
	if err != nil {
		return err
	}
	cfg := &server.Config{
		NodeName:        a.config.Name,
		Region:          a.config.Region,
		Datacenter:      a.config.Datacenter,
		DataDir:         filepath.Join(a.dataDir, "server"),
		RPCAddr:         rpcAddr,
		BootstrapExpect: a.config.Server.bootstrapExpect(),
		NumSchedulers:   a.config.Server.NumSchedulers,
		// Validate checked these.
		RaftSnapshotThreshold: uint64(a.config.Server.RaftSnapshotThreshold),
		RaftSnapshotInterval:  snapshotInterval,
		RaftTrailingLogs:      uint64(a.config.Server.RaftTrailingLogs),
		HeartbeatTTL:          ttl,
		ACLEnabled:            a.config.aclEnabled(),
		Logger:                a.logger, // the server names its own logger
	}
	if cfg.Limits, err = a.config.limits(); err != nil {
		return err
	}
	if err := a.config.applyCluster(cfg); err != nil {
		return err
	}
	a.config.Server.applyGC(cfg)
	if cfg.Events, err = a.config.Server.eventsConfig(); err != nil { // http_events.go
		return err
	}
	if a.config.rpcTLS() {
		cfg.TLS = a.tls
	}
	if cfg.EncryptKey, err = a.config.gossipKey(); err != nil {
		return err
	}
	srv, err := server.NewServer(cfg)
	var se *os.SyscallError
	switch {
	case errors.As(err, &se) && errors.Is(err, syscall.EADDRINUSE):
		return listenFailure(cfg.RPCAddr.String(), err)
	case err != nil:
		return fmt.Errorf("start server: %w", err)
	}
	a.server = srv
	if err := a.telemetry.Register(srv.MetricsCollector()); err != nil {
		return fmt.Errorf("server metrics: %w", err)
	}
	return nil
}

func (a *Agent) startClient() error {
	servers := a.config.Client.Servers
	if a.server != nil {
		servers = append([]string{a.server.RPCAddr().String()}, servers...)
	}
	var gpus []simulated.Config
	for _, g := range a.config.Client.SimulatedGPU {
		mem, _ := structs.ParseBytes(g.Memory) // checked when parsed
		gpus = append(gpus, simulated.Config{Count: g.Count, Model: g.Model, MemoryBytes: mem, ComputeCapability: g.ComputeCapability})
	}
	logger := a.logger.Named("client")
	taskDrivers := map[string]drivers.Driver{
		rawexec.Name: rawexec.NewWithConfig(logger.Named("raw_exec"), rawexec.Config{Enabled: a.config.Plugins.rawExecEnabled()}),
		exec.Name: exec.New(logger.Named("exec"), exec.Config{
			AllowFallback: a.config.Client.ExecAllowFallback,
			ChrootEnv:     a.config.Client.ChrootEnv,
		}),
		docker.Name: docker.New(logger.Named("docker"), a.config.dockerConfig()),
	}
	var rpcTLS *tlsconf.Configurator
	if a.config.rpcTLS() {
		rpcTLS = a.tls
	}
	artifactMax, artifactTimeout := a.config.Client.artifactLimits() // config_artifact.go
	c, err := client.NewClient(&client.Config{
		Name:          a.config.Name,
		Datacenter:    a.config.Datacenter,
		Region:        a.config.Region,
		NodeClass:     a.config.Client.NodeClass,
		DataDir:       filepath.Join(a.dataDir, "client"),
		Servers:       servers,
		HTTPAddr:      a.httpAddr.String(),
		Meta:          a.config.Client.Meta,
		Topology:      a.config.Client.Topology.topology(),
		SimulatedGPUs: gpus,
		GPUSharing:    a.config.Client.GPUSharing.policy(),
		MPSControl:    a.config.Client.GPUSharing.mpsControl(),
		DevMode:       a.config.DevMode,
		DevGPUs:       a.config.DevGPUs,
		Drivers:       taskDrivers,
		Users:         a.config.Client.User.userPolicy(),
		// A dev agent cleans up after itself; a real one leaves tasks
		// running across a restart and re-attaches to them.
		LeaveTasksRunning: !a.config.DevMode,
		TLS:               rpcTLS,
		Logger:            logger,
		// Validate checked these; zero keeps the client's defaults.
		GCInterval:           mustDuration(a.config.Client.GCInterval),
		GCMaxAllocs:          a.config.Client.GCMaxAllocs,
		GCDiskUsageThreshold: a.config.Client.GCDiskUsageThreshold,
		GPUHistory:           a.config.Client.GPUHistory.config(),
		Network:              a.network(),
		HostVolumes:          a.config.Client.hostVolumes(),
		CheckpointRoot:       a.config.Client.checkpointRoot(),
		ArtifactMaxSize:      artifactMax,
		ArtifactTimeout:      mustDuration(artifactTimeout),
	})
	if err != nil {
		return fmt.Errorf("start client: %w", err)
	}
	a.client = c
	if err := a.telemetry.Register(c.MetricsCollector()); err != nil {
		return fmt.Errorf("client metrics: %w", err)
	}
	return nil
}

// listenFailure is a failed listen said plainly: "listen on
// 127.0.0.1:4646: address already in use".
func listenFailure(addr string, err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		err = se.Err
	}
	return fmt.Errorf("listen on %s: %w", addr, err)
}

// HTTPAddr returns the address the HTTP API listens on.
func (a *Agent) HTTPAddr() string { return a.httpAddr.String() }

// HTTPURL is the HTTP API's base URL: https:// with tls.http.
func (a *Agent) HTTPURL() string {
	if a.config.httpTLS() {
		return "https://" + a.HTTPAddr()
	}
	return "http://" + a.HTTPAddr()
}

// Reload reads the tls block's certificate, key and CA files again (on
// SIGHUP): new connections use them, open ones keep theirs. On error
// the loaded files stay in use.
func (a *Agent) Reload() error {
	if a.tls == nil {
		return nil
	}
	if err := a.tls.Reload(); err != nil {
		return fmt.Errorf("reload tls: %w", err)
	}
	a.logger.Info("reloaded the TLS certificates")
	return nil
}

// Shutdown stops the HTTP API, the client and the server, in that order.
func (a *Agent) Shutdown() error {
	var errs []error
	if a.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// Long-polls would hold Shutdown for their full wait: close them.
		if err := a.http.Shutdown(ctx); err != nil {
			a.http.Close()
		}
		cancel()
		<-a.httpDone
	}
	if a.client != nil {
		errs = append(errs, a.client.Shutdown())
	}
	if a.server != nil {
		errs = append(errs, a.server.Shutdown())
	}
	if a.audit != nil {
		errs = append(errs, a.audit.Close())
	}
	if a.telemetry != nil {
		a.telemetry.Shutdown()
	}
	if a.tempDir {
		errs = append(errs, os.RemoveAll(a.dataDir))
	}
	a.logger.Info("agent stopped")
	return errors.Join(errs...)
}

// The methods below implement backend for the HTTP API.

// errNoRoad: an agent with neither a server nor a client (Validate
// refuses that configuration).
var errNoRoad = errors.New("agent runs neither a server nor a client")

// RPC calls a server endpoint: in process on a server agent, through the
// client's connection to the servers on a client-only agent.
func (a *Agent) RPC(ctx context.Context, method string, args, reply any) error {
	switch {
	case a.server != nil:
		// A read served here ends with its caller (a disconnected HTTP
		// client does not hold a blocking query for its whole wait).
		if q, ok := args.(interface{ SetContext(context.Context) }); ok {
			q.SetContext(ctx)
		}
		return a.server.RPC(method, args, reply)
	case a.client != nil:
		return a.client.RPC(ctx, method, args, reply)
	}
	return errNoRoad
}

// StreamCall starts a client operation, routed by the servers to the
// node it is for.
func (a *Agent) StreamCall(ctx context.Context, method, token string, args any) (net.Conn, error) {
	switch {
	case a.server != nil:
		return a.server.StreamCall(ctx, method, token, args)
	case a.client != nil:
		return a.client.StreamCall(ctx, method, token, args)
	}
	return nil, errNoRoad
}

// LocalNodeID is this agent's client's node ID, "" without a client.
func (a *Agent) LocalNodeID() string {
	if a.client == nil {
		return ""
	}
	return a.client.NodeID()
}

// Self describes the agent for /v1/agent/self, in Nomad's shape: stats
// is map[string]map[string]string (Nomad's client decodes it so), with
// "agent" saying which roles run, "nomad" the server's and "client" the
// client's.
func (a *Agent) Self() map[string]any {
	member := map[string]any{
		"Name": a.config.Name, "Addr": a.config.BindAddr, "Port": a.config.Ports.Serf,
		"Tags": map[string]string{"region": a.config.Region, "dc": a.config.Datacenter, "build": structs.Version},
	}
	stats := map[string]map[string]string{
		"agent": {"server": strconv.FormatBool(a.server != nil), "client": strconv.FormatBool(a.client != nil)},
	}
	if a.client != nil {
		stats["client"] = map[string]string{"node_id": a.client.NodeID(), "known_servers": strings.Join(a.client.Servers(), ",")}
	}
	if a.server != nil {
		stats["nomad"] = map[string]string{
			"server": "true", "leader": strconv.FormatBool(a.server.IsLeader()), "leader_addr": a.server.Leader(),
			"region": a.config.Region,
		}
	}
	return map[string]any{
		"config": map[string]any{
			"Name": a.config.Name, "Region": a.config.Region, "Datacenter": a.config.Datacenter,
			"DataDir": a.dataDir, "BindAddr": a.config.BindAddr, "DevMode": a.config.DevMode,
			"Version": map[string]string{"Version": structs.Version},
			"Ports":   a.config.Ports,
		},
		"member": member,
		"stats":  stats,
	}
}

// warnInsecure logs what a production agent should not run with: no
// ACLs on an agent that runs tasks (any local process, its tasks
// included, may then use the API as a manager), and RPC TLS that does
// not check server names (any certificate of the CA may then act as a
// server, Raft included). -dev is exempt from the first.
func warnInsecure(cfg *Config, logger hclog.Logger) {
	if !cfg.DevMode && !cfg.aclEnabled() {
		logger.Warn("ACLs are off: anyone who reaches the HTTP or RPC port, local tasks included, may manage the cluster; set acl { enabled = true }")
	}
	if cfg.TLS != nil && cfg.TLS.RPC && !cfg.TLS.VerifyServerHostname {
		logger.Warn("tls.verify_server_hostname is off: any certificate of the CA, a client's or the CLI's, may act as a server (Raft included); set it to true")
	}
}
