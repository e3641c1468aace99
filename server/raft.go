package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/structs"
)

// Raft timings for a small cluster on a fast network: a lone server
// elects itself in about a second.
const (
	raftHeartbeatTimeout   = 500 * time.Millisecond
	raftElectionTimeout    = 500 * time.Millisecond
	raftLeaderLeaseTimeout = 250 * time.Millisecond
	raftCommitTimeout      = 20 * time.Millisecond
	raftTransportTimeout   = 10 * time.Second
	raftSnapshotsRetained  = 2
)

// raftLayer is the raft.StreamLayer of the RPC port: the RPC listener
// hands it the connections whose first byte is structs.RPCTypeRaft, and
// its Dial writes that byte before raft speaks. It keeps every raft
// connection, both ways, until the connection is closed: raft's transport
// closes neither its pooled connections nor the ones it accepted when it
// shuts down, so Close does (a shut-down server leaves no reader blocked
// on a peer that may never write again).
type raftLayer struct {
	addr      net.Addr
	connCh    chan net.Conn
	closeOnce sync.Once
	closeCh   chan struct{}
	// dial opens connections to peers (the server's dialRPC); nil dials
	// directly.
	dial func(addr string, timeout time.Duration) (net.Conn, error)

	mu     sync.Mutex
	conns  map[*raftConn]struct{}
	closed bool
}

// raftConn is a raft connection the layer tracks until it is closed.
type raftConn struct {
	net.Conn
	layer *raftLayer
	once  sync.Once
}

func (c *raftConn) Close() error {
	var err error
	c.once.Do(func() {
		c.layer.mu.Lock()
		delete(c.layer.conns, c)
		c.layer.mu.Unlock()
		err = c.Conn.Close()
	})
	return err
}

// track wraps conn so that the layer closes it at Close; after Close it
// closes conn at once and reports false.
func (l *raftLayer) track(conn net.Conn) (*raftConn, bool) {
	rc := &raftConn{Conn: conn, layer: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = conn.Close()
		return nil, false
	}
	if l.conns == nil {
		l.conns = make(map[*raftConn]struct{})
	}
	l.conns[rc] = struct{}{}
	return rc, true
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func newRaftLayer(addr net.Addr) *raftLayer {
	return &raftLayer{addr: addr, connCh: make(chan net.Conn), closeCh: make(chan struct{})}
}

// Handoff gives an accepted connection to raft; it blocks until raft
// takes it or the layer closes (then the connection is closed).
func (l *raftLayer) Handoff(conn net.Conn) {
	rc, ok := l.track(conn)
	if !ok {
		return
	}
	select {
	case l.connCh <- rc:
	case <-l.closeCh:
		_ = rc.Close()
	}
}

// Accept implements net.Listener.
func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case conn := <-l.connCh:
		return conn, nil
	case <-l.closeCh:
		return nil, fmt.Errorf("raft layer: %w", net.ErrClosed)
	}
}

// Close implements net.Listener and closes every raft connection still
// open, both ways; the RPC listener itself stays open.
func (l *raftLayer) Close() error {
	l.closeOnce.Do(func() { close(l.closeCh) })
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
	return nil
}

// Addr implements net.Listener: the address peers reach this server at.
func (l *raftLayer) Addr() net.Addr { return l.addr }

// Dial implements raft.StreamLayer.
func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	dial := l.dial
	if dial == nil {
		dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, timeout)
		}
	}
	conn, err := dial(string(address), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte{structs.RPCTypeRaft}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("dial raft %s: %w", address, err)
	}
	rc, ok := l.track(conn)
	if !ok {
		return nil, fmt.Errorf("dial raft %s: %w", address, net.ErrClosed)
	}
	return rc, nil
}

// setupRaft opens the log and snapshot stores under DataDir/raft, creates
// the transport on the raft layer, bootstraps a lone server's
// configuration on first start, and starts raft. A server expecting more
// servers bootstraps later, in maybeBootstrap.
func (s *Server) setupRaft() error {
	dir := filepath.Join(s.config.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create raft dir: %w", err)
	}
	id, err := serverID(s.config.DataDir)
	if err != nil {
		return err
	}
	s.raftStore, err = openRaftStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return err
	}
	logger := s.logger.Named("raft")
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, raftSnapshotsRetained, logger)
	if err != nil {
		return fmt.Errorf("open raft snapshots: %w", err)
	}
	s.raftTransport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: s.raftLayer, MaxPool: 3, Timeout: raftTransportTimeout, Logger: logger,
	})

	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(id)
	conf.Logger = logger
	conf.HeartbeatTimeout = raftHeartbeatTimeout
	conf.ElectionTimeout = raftElectionTimeout
	conf.LeaderLeaseTimeout = raftLeaderLeaseTimeout
	conf.CommitTimeout = raftCommitTimeout
	if s.config.RaftSnapshotThreshold > 0 {
		conf.SnapshotThreshold = s.config.RaftSnapshotThreshold
	}
	if s.config.RaftSnapshotInterval > 0 {
		conf.SnapshotInterval = s.config.RaftSnapshotInterval
	}
	if s.config.RaftTrailingLogs > 0 {
		conf.TrailingLogs = s.config.RaftTrailingLogs
	}

	// A lone server (BootstrapExpect 1) bootstraps here, on first start;
	// a cluster bootstraps once its servers meet in serf (maybeBootstrap);
	// a server with Raft state, or told to expect none, never does.
	s.raftID = conf.LocalID
	has, err := raft.HasExistingState(s.raftStore, s.raftStore, snaps)
	if err != nil {
		return fmt.Errorf("read raft state: %w", err)
	}
	if has || s.config.BootstrapExpect <= 1 {
		s.bootstrapped.Store(true)
	}
	if s.config.BootstrapExpect == 1 && !has {
		servers := raft.Configuration{Servers: []raft.Server{{
			Suffrage: raft.Voter, ID: conf.LocalID, Address: s.raftTransport.LocalAddr(),
		}}}
		if err := raft.BootstrapCluster(conf, s.raftStore, s.raftStore, snaps, s.raftTransport, servers); err != nil {
			return fmt.Errorf("bootstrap raft: %w", err)
		}
	}
	s.raft, err = raft.NewRaft(conf, s.fsm, s.raftStore, s.raftStore, snaps, s.raftTransport)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	return nil
}

// serverID returns the server's stable Raft ID, created on first start.
func serverID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "server-id")
	buf, err := os.ReadFile(path)
	switch {
	case err == nil:
		if id := strings.TrimSpace(string(buf)); id != "" {
			return id, nil
		}
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read server ID: %w", err)
	}
	id := structs.GenerateUUID()
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write server ID: %w", err)
	}
	return id, nil
}

// raftApply commits msg through Raft and returns its index once the FSM
// applied it; an error the FSM returned is returned as is.
func (s *Server) raftApply(t structs.MessageType, msg any) (uint64, error) {
	// A caller's token secret is never written to the log (the request
	// was authorized already; the entry is what changed, not who). The
	// token is cleared on a copy: the caller may pass its own args, which
	// a retry authorizes again.
	if v := reflect.ValueOf(msg); v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct {
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(v.Elem())
		if a, ok := c.Interface().(structs.AuthTokenSetter); ok {
			a.SetAuthToken("")
			msg = a
		}
	}
	buf, err := structs.Encode(t, msg)
	if err != nil {
		return 0, err
	}
	future := s.raft.Apply(buf, raftApplyTimeout)
	if err := future.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrLeadershipLost):
			// The entry may still commit under the next leader.
			return 0, fmt.Errorf("raft apply: %w (%v)", structs.ErrOutcomeUnknown, err)
		case errors.Is(err, raft.ErrNotLeader):
			return 0, fmt.Errorf("raft apply: %w (%v)", structs.ErrNotLeader, err)
		case errors.Is(err, raft.ErrRaftShutdown):
			return 0, fmt.Errorf("raft apply: %w", structs.ErrShuttingDown)
		}
		return 0, fmt.Errorf("raft apply: %w", err)
	}
	if resp, ok := future.Response().(error); ok && resp != nil {
		return 0, resp
	}
	return future.Index(), nil
}

// applyFunc adapts a function to plan.Raft.
type applyFunc func(t structs.MessageType, msg any) (uint64, error)

func (f applyFunc) Apply(t structs.MessageType, msg any) (uint64, error) { return f(t, msg) }
