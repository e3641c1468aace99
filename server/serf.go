package server

import (
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"

	"github.com/droverhq/drover/structs"
)

// Serf tags every server sets on its LAN member; the bootstrap and the
// leader's reconciliation read them.
const (
	serfTagRole            = "role"
	serfRoleServer         = "server"
	serfTagID              = "id" // Raft server ID
	serfTagRPCAddr         = "rpc_addr"
	serfTagRegion          = "region"
	serfTagDC              = "dc"
	serfTagBootstrapExpect = "bootstrap_expect"
)

const (
	// serfEventChSize buffers serf's events, which serf sends blocking.
	serfEventChSize = 1024
	// serfSnapshotFile (under DataDir) remembers the pool, so a restarted
	// server rejoins it by itself.
	serfSnapshotFile = "serf/local.snapshot"
	// serfBindRetries is how often a free serf port is tried when port 0
	// was asked for: TCP and UDP must both get the same number.
	serfBindRetries = 10
	// bootstrapRetryWait is how long a bootstrap that could not ask every
	// server about its Raft state waits before it asks again.
	bootstrapRetryWait = time.Second
)

// serverMember is a serf member that is a server, as its tags describe it.
type serverMember struct {
	Name            string
	ID              string
	RPCAddr         string
	Region          string
	Datacenter      string
	BootstrapExpect int
	Status          serf.MemberStatus
}

// parseServerMember reads a server's tags; ok is false for members that
// are not servers or carry no Raft ID or RPC address.
func parseServerMember(m serf.Member) (serverMember, bool) {
	if m.Tags[serfTagRole] != serfRoleServer || m.Tags[serfTagID] == "" || m.Tags[serfTagRPCAddr] == "" {
		return serverMember{}, false
	}
	expect, _ := strconv.Atoi(m.Tags[serfTagBootstrapExpect])
	return serverMember{
		Name: m.Name, ID: m.Tags[serfTagID], RPCAddr: m.Tags[serfTagRPCAddr],
		Region: m.Tags[serfTagRegion], Datacenter: m.Tags[serfTagDC],
		BootstrapExpect: expect, Status: m.Status,
	}, true
}

// serfNodeName is the server's member name: "name.region", as in Nomad,
// so that regions can share a WAN pool later.
func (s *Server) serfNodeName() string { return s.config.NodeName + "." + s.config.Region }

// setupSerf starts the server's serf LAN pool on SerfAddr with the
// server's tags, and the goroutines that handle its events and the
// configured retry_join. It runs after Raft, whose ID the tags carry.
func (s *Server) setupSerf() error {
	logger := s.logger.Named("serf")
	stdlog := logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	nt, err := newSerfTransport(s.config.SerfAddr, stdlog)
	if err != nil {
		return err
	}
	var transport memberlist.Transport = nt
	if s.config.partition != nil {
		transport = newFilteredTransport(nt, s.config.partition)
	}
	port := nt.GetAutoBindPort()
	s.serfAddr = &net.TCPAddr{IP: s.config.SerfAddr.IP, Port: port}

	ml := memberlist.DefaultLANConfig()
	ml.BindAddr = s.config.SerfAddr.IP.String()
	ml.BindPort, ml.AdvertisePort = port, port
	if ip := s.config.SerfAddr.IP; ip == nil || ip.IsUnspecified() {
		// Gossip where RPC is advertised, so both name the same host.
		ml.AdvertiseAddr = s.advertise.(*net.TCPAddr).IP.String()
	}
	ml.Transport = transport
	ml.Logger = stdlog

	conf := serf.DefaultConfig()
	conf.Init()
	conf.NodeName = s.serfNodeName()
	conf.Tags = map[string]string{
		serfTagRole:            serfRoleServer,
		serfTagID:              string(s.raftID),
		serfTagRPCAddr:         s.advertise.String(),
		serfTagRegion:          s.config.Region,
		serfTagDC:              s.config.Datacenter,
		serfTagBootstrapExpect: strconv.Itoa(s.config.BootstrapExpect),
	}
	conf.EventCh = s.serfEvents
	conf.MemberlistConfig = ml
	conf.Logger = stdlog
	conf.SnapshotPath = filepath.Join(s.config.DataDir, serfSnapshotFile)
	if err := os.MkdirAll(filepath.Dir(conf.SnapshotPath), 0o700); err != nil {
		_ = transport.Shutdown()
		return fmt.Errorf("create serf dir: %w", err)
	}
	if err := s.setupKeyring(conf); err != nil {
		_ = transport.Shutdown()
		return err
	}
	if s.config.serfTuning != nil {
		s.config.serfTuning(conf)
	}
	s.serf, err = serf.Create(conf)
	if err != nil {
		_ = transport.Shutdown()
		return fmt.Errorf("start serf: %w", err)
	}
	s.serfWG.Add(1)
	go s.serfEventLoop()
	if len(s.config.RetryJoin) > 0 {
		s.serfWG.Add(1)
		go s.retryJoin()
	}
	return nil
}

// newSerfTransport listens on addr (TCP and UDP on one port); port 0
// tries a few free ports, since the kernel picks the TCP one and UDP may
// have it taken.
func newSerfTransport(addr *net.TCPAddr, logger *log.Logger) (*memberlist.NetTransport, error) {
	conf := &memberlist.NetTransportConfig{BindAddrs: []string{addr.IP.String()}, BindPort: addr.Port, Logger: logger}
	tries := 1
	if addr.Port == 0 {
		tries = serfBindRetries
	}
	var err error
	for range tries {
		var nt *memberlist.NetTransport
		if nt, err = memberlist.NewNetTransport(conf); err == nil {
			return nt, nil
		}
	}
	return nil, fmt.Errorf("listen for serf on %s: %w", addr, err)
}

// shutdownSerf stops serf abruptly (peers see this server fail, not
// leave) and waits for the event and join goroutines.
func (s *Server) shutdownSerf() error {
	var err error
	if s.serf != nil {
		if err = s.serf.Shutdown(); err != nil {
			err = fmt.Errorf("shut down serf: %w", err)
		}
	}
	s.serfWG.Wait()
	return err
}

// serfEventLoop handles serf's member events until shutdown: each one
// may complete the bootstrap and wakes the leader's reconciliation.
func (s *Server) serfEventLoop() {
	defer s.serfWG.Done()
	var retry <-chan time.Time
	for {
		select {
		case <-s.shutdownCh:
			return
		case e := <-s.serfEvents:
			me, ok := e.(serf.MemberEvent)
			if !ok {
				continue
			}
			s.logger.Debug("serf member event", "event", me.Type.String(), "members", memberNames(me.Members))
			s.wakeReconcile()
			if me.Type == serf.EventMemberJoin || me.Type == serf.EventMemberUpdate {
				if s.maybeBootstrap() {
					retry = time.After(bootstrapRetryWait)
				}
			}
		case <-retry:
			retry = nil
			if s.maybeBootstrap() {
				retry = time.After(bootstrapRetryWait)
			}
		}
	}
}

func memberNames(ms []serf.Member) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return strings.Join(names, ",")
}

// wakeReconcile asks the leader's reconciliation to run soon; it never
// blocks (one pending wake-up is enough).
func (s *Server) wakeReconcile() {
	select {
	case s.reconcileCh <- struct{}{}:
	default:
	}
}

// retryJoin joins the configured addresses every RetryJoinInterval until
// one join succeeds, the attempts run out, or the server shuts down.
func (s *Server) retryJoin() {
	defer s.serfWG.Done()
	for attempt := 1; ; attempt++ {
		n, err := s.serf.Join(s.config.RetryJoin, true)
		if err == nil || n > 0 {
			s.logger.Info("joined the cluster", "contacted", n, "addrs", s.config.RetryJoin)
			return
		}
		if limit := s.config.RetryJoinMaxAttempts; limit > 0 && attempt >= limit {
			s.logger.Error("retry_join gave up", "attempts", attempt, "error", err)
			return
		}
		s.logger.Warn("retry_join failed, will retry", "attempt", attempt, "retry_in", s.config.RetryJoinInterval, "error", err)
		select {
		case <-s.shutdownCh:
			return
		case <-time.After(s.config.RetryJoinInterval):
		}
	}
}

// Join adds the serf addresses ("host:port" or "host") to this server's
// pool and returns how many it reached.
func (s *Server) Join(addrs []string) (int, error) {
	if len(addrs) == 0 {
		return 0, fmt.Errorf("join: no addresses: %w", structs.ErrInvalid)
	}
	n, err := s.serf.Join(addrs, true)
	if err != nil {
		return n, fmt.Errorf("join %s: %w", strings.Join(addrs, ", "), err)
	}
	return n, nil
}

// SerfAddr returns the address the server gossips on.
func (s *Server) SerfAddr() net.Addr { return s.serfAddr }

// serverMembers returns the servers of this server's region that serf
// knows, in any status.
func (s *Server) serverMembers() []serverMember {
	var out []serverMember
	for _, m := range s.serf.Members() {
		sm, ok := parseServerMember(m)
		if ok && sm.Region == s.config.Region {
			out = append(out, sm)
		}
	}
	return out
}
