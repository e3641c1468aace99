package server

import (
	"net"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/server/scheduler"
)

// Defaults for a Config's zero fields.
const (
	DefaultRPCPort       = 4647
	DefaultNumSchedulers = 2
	DefaultHeartbeatTTL  = 10 * time.Second
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
	// DataDir holds raft/ (raft.db and snapshots/) and the server's ID.
	DataDir string
	// RPCAddr is where RPC and Raft listen; port 0 picks a free one.
	RPCAddr *net.TCPAddr
	// BootstrapExpect is the cluster size to bootstrap; 1 for dev.
	BootstrapExpect int
	// NumSchedulers is how many scheduler workers run on the leader.
	NumSchedulers int
	// HeartbeatTTL is how long a node may go without a heartbeat before
	// it is marked down.
	HeartbeatTTL time.Duration
	// FailoverHeartbeatTTL is the first TTL a new leader gives every ready
	// node, so clients have time to find it (default 5 x HeartbeatTTL).
	FailoverHeartbeatTTL time.Duration
	Logger               hclog.Logger

	// schedulerOptions are passed to every scheduler the workers create
	// (tests shorten the reschedule delays with them).
	schedulerOptions []scheduler.Option
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
	if out.NumSchedulers <= 0 {
		out.NumSchedulers = DefaultNumSchedulers
	}
	if out.HeartbeatTTL <= 0 {
		out.HeartbeatTTL = DefaultHeartbeatTTL
	}
	if out.FailoverHeartbeatTTL <= 0 {
		out.FailoverHeartbeatTTL = 5 * out.HeartbeatTTL
	}
	return &out
}
