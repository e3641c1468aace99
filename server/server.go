package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/hashicorp/serf/serf"

	"github.com/droverhq/drover/server/broker"
	"github.com/droverhq/drover/server/events"
	"github.com/droverhq/drover/server/fsm"
	"github.com/droverhq/drover/server/plan"
	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/server/state"
)

// Server is one Drover server: Raft member, RPC endpoint and, while it is
// the leader, scheduler.
type Server struct {
	config *Config
	logger hclog.Logger

	fsm           *fsm.FSM
	raft          *raft.Raft
	raftStore     *raftboltdb.BoltStore
	raftTransport *raft.NetworkTransport
	raftLayer     *raftLayer

	listener  net.Listener
	advertise net.Addr
	methods   map[string]rpcMethod
	nodeConns *nodeConns // sessions of the clients connected to this server
	connsMu   sync.Mutex
	conns     map[net.Conn]struct{} // nil once shutting down
	pool      *connPool             // sessions to the other servers (forward.go)
	startedAt time.Time
	gcMu      sync.Mutex // one garbage collection at a time (gc.go)

	broker     *broker.EvalBroker
	blocked    *broker.BlockedEvals
	applier    *plan.Applier
	heartbeats *heartbeats
	aclCache   aclResolver
	notifier   *notifier
	// eventBroker is this server's event buffer (endpoint_event.go).
	eventBroker *events.Broker
	// nodeCache keeps the scheduler workers' node verdicts across evals.
	nodeCache *feasible.NodeCache
	// keys is the variables' root keystore (keystore.go), opened on first
	// use; keyGenMu serializes the leader's first key generation.
	keys     *keystore
	keysErr  error
	keysOnce sync.Once
	keyGenMu sync.Mutex

	raftID       raft.ServerID
	bootstrapped atomic.Bool // a BootstrapExpect > 1 bootstrap is done or not needed
	// leaderReady is set while this server leads with its state caught up
	// (after the leader's barrier): until then requests wait as if there
	// were no leader.
	leaderReady atomic.Bool
	readyTerm   atomic.Uint64 // the Raft term the leader's barrier ran in
	serf        *serf.Serf
	serfAddr    net.Addr
	serfEvents  chan serf.Event
	serfWG      sync.WaitGroup // serf event loop and retry_join
	reconcileCh chan struct{}  // serf changes for the leader's reconciliation

	// leaderOps carries work to run with the leader's duties stopped
	// (snapshot restore) to the leadership monitor.
	leaderOps chan leaderOp

	shutdownCh   chan struct{}
	shutdownOnce sync.Once
	shutdownErr  error
	wg           sync.WaitGroup // accept loop and connections
	monitorWG    sync.WaitGroup // leadership monitor (and the leader's duties)
}

// NewServer opens Raft in cfg.DataDir, starts the RPC listener, bootstraps
// a single-server cluster when BootstrapExpect is 1, and starts watching
// for leadership.
func NewServer(cfg *Config) (*Server, error) {
	if cfg == nil || cfg.DataDir == "" {
		return nil, errors.New("new server: missing data dir")
	}
	cfg = cfg.withDefaults()
	if cfg.NodeName == "" {
		cfg.NodeName, _ = os.Hostname()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	s := &Server{
		config:     cfg,
		logger:     cfg.Logger.Named("server"),
		conns:      map[net.Conn]struct{}{},
		shutdownCh: make(chan struct{}),
		nodeConns:  newNodeConns(),
		serfEvents: make(chan serf.Event, serfEventChSize),
		// one pending wake-up for the leader's reconciliation is enough
		reconcileCh: make(chan struct{}, 1),
		startedAt:   time.Now(),
		leaderOps:   make(chan leaderOp),
	}
	s.pool = newConnPool(s.logger.Named("pool"), s.dialRPC, forwardDialTimeout)
	s.broker = broker.NewEvalBroker(evalNackTimeout, evalDeliveryLimit, s.logger.Named("broker"))
	s.blocked = broker.NewBlockedEvals(s.broker, s.logger.Named("blocked_evals"))
	s.heartbeats = newHeartbeats()
	s.nodeCache = feasible.NewNodeCache()
	s.notifier = &notifier{broker: s.broker, blocked: s.blocked}
	s.applier = plan.NewApplier(applyFunc(s.raftApply), stateSource{s}, s.logger.Named("plan"))

	var err error
	if s.fsm, err = fsm.New(s.logger, s.notifier); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	s.setupEvents()
	if err := s.start(); err != nil {
		_ = s.Shutdown()
		return nil, fmt.Errorf("new server: %w", err)
	}
	s.logger.Info("server started", "rpc_addr", s.advertise, "data_dir", cfg.DataDir)
	return s, nil
}

// start opens the listener and Raft and starts the goroutines.
func (s *Server) start() error {
	ln, err := net.ListenTCP("tcp", s.config.RPCAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.config.RPCAddr, err)
	}
	s.listener = ln
	s.advertise = advertiseAddr(ln.Addr().(*net.TCPAddr))
	s.raftLayer = newRaftLayer(s.advertise)
	s.raftLayer.dial = s.dialRPC
	if err := s.setupRPC(); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.acceptLoop()
	if err := s.setupRaft(); err != nil {
		return err
	}
	if err := s.setupSerf(); err != nil {
		return err
	}
	s.monitorWG.Add(1)
	go s.monitorLeadership()
	s.startKeyReplication()
	return nil
}

// advertiseAddr is the address peers and clients are told to use: the
// listen address, with loopback standing in for an unspecified IP.
func advertiseAddr(addr *net.TCPAddr) net.Addr {
	if addr.IP == nil || addr.IP.IsUnspecified() {
		return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: addr.Port}
	}
	return addr
}

// Shutdown stops the leader's duties, Raft, the listener and every
// connection, and waits for all of the server's goroutines.
func (s *Server) Shutdown() error {
	s.shutdownOnce.Do(func() {
		s.logger.Info("shutting down")
		close(s.shutdownCh)
		s.eventBroker.Close()
		s.monitorWG.Wait()
		serfErr := s.shutdownSerf()
		s.pool.Close()
		errs := []error{serfErr}
		if s.raft != nil {
			if err := s.raft.Shutdown().Error(); err != nil {
				errs = append(errs, fmt.Errorf("shut down raft: %w", err))
			}
		}
		if s.raftTransport != nil {
			if err := s.raftTransport.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close raft transport: %w", err))
			}
		}
		if s.raftLayer != nil {
			_ = s.raftLayer.Close()
		}
		if s.listener != nil {
			if err := s.listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, fmt.Errorf("close listener: %w", err))
			}
		}
		s.closeConns()
		s.wg.Wait()
		if s.raftStore != nil {
			if err := s.raftStore.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close raft log: %w", err))
			}
		}
		s.shutdownErr = errors.Join(errs...)
	})
	return s.shutdownErr
}

// State returns the current state store (replaced when Raft restores a
// snapshot). Callers must not write to it.
func (s *Server) State() *state.StateStore { return s.fsm.State() }

// IsLeader reports whether this server is the Raft leader.
func (s *Server) IsLeader() bool { return s.raft != nil && s.raft.State() == raft.Leader }

// Leader returns the leader's RPC address, or "" if there is none.
func (s *Server) Leader() string {
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}

// Peers returns the RPC addresses of the Raft voters and non-voters.
func (s *Server) Peers() []string {
	future := s.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		s.logger.Warn("read raft configuration", "error", err)
		return nil
	}
	var out []string
	for _, srv := range future.Configuration().Servers {
		out = append(out, string(srv.Address))
	}
	return out
}

// RPCAddr returns the address clients reach the server at.
func (s *Server) RPCAddr() net.Addr { return s.advertise }

// LastContact returns how long ago this server heard from the leader: 0
// on the leader, the server's uptime when it never has.
func (s *Server) LastContact() time.Duration {
	if s.IsLeader() {
		return 0
	}
	last := s.raft.LastContact()
	if last.IsZero() {
		return time.Since(s.startedAt)
	}
	return time.Since(last)
}

// stateSource adapts the server to plan.StateSource, always reading the
// FSM's current store.
type stateSource struct{ s *Server }

func (src stateSource) Snapshot() (*state.StateSnapshot, error) { return src.s.State().Snapshot() }
