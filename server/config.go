package server

import (
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/serf/serf"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/structs"
	"github.com/droverhq/drover/tlsconf"
)

// Defaults for a Config's zero fields.
const (
	DefaultRPCPort       = 4647
	DefaultSerfPort      = 4648
	DefaultNumSchedulers = 2
	DefaultHeartbeatTTL  = 10 * time.Second
	// DefaultDeadServerTimeout is how long a server may be failed (or
	// missing from serf) before the leader removes it from Raft.
	DefaultDeadServerTimeout = 10 * time.Minute
	// DefaultRetryJoinInterval is the wait between retry_join attempts.
	DefaultRetryJoinInterval = 30 * time.Second
	// defaultReconcileInterval is how often the leader reconciles serf
	// membership with the Raft configuration besides on serf events.
	defaultReconcileInterval = 10 * time.Second
)

// evalTriggerFailedFollowUp is the trigger of the evaluation that retries
// a job after one of its evaluations failed (Nomad's name for it).
const evalTriggerFailedFollowUp = "failed-eval-follow-up"

// Timings that are not configurable yet.
const (
	// evalNackTimeout is how long a worker may hold an evaluation without
	// progress before the broker redelivers it.
	evalNackTimeout = time.Minute
	// evalDeliveryLimit is how often an evaluation is tried before it is
	// marked failed.
	evalDeliveryLimit = 3
	// raftApplyTimeout bounds how long a write waits to be enqueued in Raft.
	raftApplyTimeout = 30 * time.Second
	// maxQueryTime caps a blocking query's wait.
	maxQueryTime = 5 * time.Minute
	// failedEvalFollowUpWait is how long after an evaluation is marked
	// failed its follow-up retries the job.
	failedEvalFollowUpWait = time.Minute
	// indexWaitTimeout bounds how long a worker waits for its state to
	// catch up with an evaluation or a plan's refresh index.
	indexWaitTimeout = 5 * time.Second
)

// Config configures a Server.
type Config struct {
	NodeName, Region, Datacenter string
	// ACLEnabled makes every endpoint check the request's ACL token.
	ACLEnabled bool
	// DataDir holds raft/ (raft.db and snapshots/) and the server's ID.
	DataDir string
	// RPCAddr is where RPC and Raft listen; port 0 picks a free one.
	RPCAddr *net.TCPAddr
	// SerfAddr is where the serf LAN pool gossips (TCP and UDP). nil: the
	// RPC address's IP at DefaultSerfPort, or a free port when the RPC
	// port is 0 (tests); port 0 picks a free one.
	SerfAddr *net.TCPAddr
	// BootstrapExpect is the cluster size to bootstrap: 1 bootstraps a
	// lone server at once (dev); N > 1 waits until N servers of the region
	// are in serf and none has Raft state; 0 never bootstraps (the server
	// joins an existing cluster).
	BootstrapExpect int
	// RetryJoin lists serf addresses ("host:port", or "host" for
	// DefaultSerfPort) to join at start, retried every RetryJoinInterval
	// until one join succeeds or RetryJoinMaxAttempts (0: no limit) fail.
	RetryJoin            []string
	RetryJoinInterval    time.Duration
	RetryJoinMaxAttempts int
	// DeadServerTimeout is how long a server may be failed, or missing
	// from serf, before the leader removes it from the Raft configuration.
	DeadServerTimeout time.Duration
	// NumSchedulers is how many scheduler workers run on the leader.
	NumSchedulers int
	// RaftSnapshotThreshold, RaftSnapshotInterval and RaftTrailingLogs
	// set raft.Config's SnapshotThreshold, SnapshotInterval and
	// TrailingLogs: every interval Raft snapshots the FSM when at least
	// threshold entries came since the last snapshot, and compacts the
	// log, keeping the last TrailingLogs entries. 0 keeps Raft's default.
	RaftSnapshotThreshold uint64
	RaftSnapshotInterval  time.Duration
	RaftTrailingLogs      uint64
	// HeartbeatTTL is how long a node may go without a heartbeat before
	// it is marked down.
	HeartbeatTTL time.Duration
	// FailoverHeartbeatTTL is the first TTL a new leader gives every ready
	// node, so clients have time to find it (default 5 x HeartbeatTTL).
	FailoverHeartbeatTTL time.Duration
	// RPCHoldTimeout is how long a request waits for a leader (through an
	// election, retrying with backoff) before it fails with "no cluster
	// leader" (default DefaultRPCHoldTimeout).
	RPCHoldTimeout time.Duration
	// TLS, when set, makes every connection to the RPC port mutual TLS
	// (structs.RPCTypeTLS, rpc_tls.go): the server refuses plaintext
	// ones and dials its peers over TLS. nil: plaintext.
	TLS *tlsconf.Configurator
	// EncryptKey is the serf gossip encryption key (16, 24 or 32 bytes).
	// A keyring file kept from an earlier start (DataDir/serf/keyring,
	// which keyring changes rewrite) wins over it; with neither, gossip
	// is in the clear.
	EncryptKey []byte
	// Limits bound the jobs Job.Register, Job.Plan and Job.Scale accept
	// (the agent's limits block; zero fields are the defaults).
	Limits structs.Limits
	// PeriodicClock is the periodic dispatcher's clock (nil: the wall
	// clock; server/periodic.go).
	PeriodicClock PeriodicClock
	Logger        hclog.Logger
	// Events sizes the event stream (endpoint_event.go).
	Events EventsConfig

	// GCInterval is how often the leader collects garbage (server/gc.go);
	// JobGCThreshold, EvalGCThreshold and NodeGCThreshold are how long a
	// finished job, a finished evaluation or allocation, and a down node
	// are kept first. Zero: DefaultGCInterval and the Default*GCThreshold.
	GCInterval      time.Duration
	JobGCThreshold  time.Duration
	EvalGCThreshold time.Duration
	NodeGCThreshold time.Duration

	// reconcileInterval overrides defaultReconcileInterval (tests).
	reconcileInterval time.Duration
	// serfTuning, when set (tests), adjusts the serf and memberlist
	// configuration before serf starts, e.g. to shorten its timings.
	serfTuning func(*serf.Config)
	// partition, when set (tests), cuts this server off from chosen peers:
	// see peerFilter.
	partition *peerFilter

	// schedulerOptions are passed to every scheduler the workers create
	// (tests shorten the reschedule delays with them).
	schedulerOptions []scheduler.Option
	// clock, when set (tests), is the deployment watcher's time
	// (deployment_watcher.go).
	clock func() time.Time
}

// withDefaults returns a copy of c with zero fields defaulted.
func (c *Config) withDefaults() *Config {
	out := *c
	if out.Logger == nil {
		out.Logger = hclog.NewNullLogger()
	}
	if out.Region == "" {
		out.Region = "global"
	}
	if out.Datacenter == "" {
		out.Datacenter = "dc1"
	}
	if out.RPCAddr == nil {
		out.RPCAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: DefaultRPCPort}
	}
	if out.SerfAddr == nil {
		port := DefaultSerfPort
		if out.RPCAddr.Port == 0 {
			port = 0
		}
		out.SerfAddr = &net.TCPAddr{IP: out.RPCAddr.IP, Port: port}
	}
	if out.RetryJoinInterval <= 0 {
		out.RetryJoinInterval = DefaultRetryJoinInterval
	}
	if out.DeadServerTimeout <= 0 {
		out.DeadServerTimeout = DefaultDeadServerTimeout
	}
	if out.reconcileInterval <= 0 {
		out.reconcileInterval = defaultReconcileInterval
	}
	if out.NumSchedulers <= 0 {
		out.NumSchedulers = DefaultNumSchedulers
	}
	if out.HeartbeatTTL <= 0 {
		out.HeartbeatTTL = DefaultHeartbeatTTL
	}
	if out.RPCHoldTimeout <= 0 {
		out.RPCHoldTimeout = DefaultRPCHoldTimeout
	}
	if out.GCInterval <= 0 {
		out.GCInterval = DefaultGCInterval
	}
	if out.JobGCThreshold <= 0 {
		out.JobGCThreshold = DefaultJobGCThreshold
	}
	if out.EvalGCThreshold <= 0 {
		out.EvalGCThreshold = DefaultEvalGCThreshold
	}
	if out.NodeGCThreshold <= 0 {
		out.NodeGCThreshold = DefaultNodeGCThreshold
	}
	if out.FailoverHeartbeatTTL <= 0 {
		out.FailoverHeartbeatTTL = 5 * out.HeartbeatTTL
	}
	return &out
}
