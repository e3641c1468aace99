package server

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"
)

// testCluster is an in-process cluster of servers for fault tests: real
// Raft over loopback TCP, BoltDB in temp dirs, and a serf LAN pool with
// short timings. Servers are addressed by index; a killed server's slot
// is nil until Restart.
//
// Partition(i) cuts server i off from every other server (Raft, RPC and
// serf) with the servers' test-only peer filter (Config.partition): for
// it to see a connection, every server-to-server dial must go through
// (*Server).dialPeer. Clients are not filtered.
//
// The harness is not safe for concurrent use: call it from the test's
// goroutine.
type testCluster struct {
	t           *testing.T
	servers     []*Server
	configs     []*Config
	partitioned map[int]bool
	opts        clusterOptions
}

// clusterOptions tune a test cluster.
type clusterOptions struct {
	deadServerTimeout time.Duration
	configure         []func(i int, c *Config)
}

// clusterOption is an option of newTestCluster.
type clusterOption func(*clusterOptions)

// withDeadServerTimeout sets how long a server may be down before the
// leader removes it from Raft (default: a minute, longer than any test).
func withDeadServerTimeout(d time.Duration) clusterOption {
	return func(o *clusterOptions) { o.deadServerTimeout = d }
}

// withServerConfig changes server i's config before it first starts.
func withServerConfig(fn func(i int, c *Config)) clusterOption {
	return func(o *clusterOptions) { o.configure = append(o.configure, fn) }
}

// clusterFormTimeout bounds how long a cluster may take to elect its
// first leader and agree on its configuration.
const clusterFormTimeout = 20 * time.Second

// newTestCluster starts n servers with bootstrap_expect = n, joins them
// through serf, and waits until they have a leader and every server's
// Raft configuration lists the n voters. It shuts them down when the test
// ends.
func newTestCluster(t *testing.T, n int, opts ...clusterOption) *testCluster {
	t.Helper()
	c := &testCluster{t: t, partitioned: map[int]bool{}, opts: clusterOptions{deadServerTimeout: time.Minute}}
	for _, o := range opts {
		o(&c.opts)
	}
	t.Cleanup(c.shutdownAll)
	for range n {
		c.start(n)
	}
	for i := 1; i < n; i++ {
		c.join(i)
	}
	c.WaitForLeader(clusterFormTimeout)
	c.WaitForVoters(n, clusterFormTimeout)
	return c
}

// start creates and starts one more server expecting a cluster of expect.
func (c *testCluster) start(expect int) int {
	c.t.Helper()
	i := len(c.servers)
	cfg := testConfig(c.t)
	cfg.NodeName = fmt.Sprintf("server-%d", i+1)
	cfg.Logger = cfg.Logger.Named(cfg.NodeName)
	cfg.BootstrapExpect = expect
	cfg.SerfAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	cfg.DeadServerTimeout = c.opts.deadServerTimeout
	cfg.reconcileInterval = 100 * time.Millisecond
	cfg.serfTuning = fastSerf
	cfg.partition = newPeerFilter()
	for _, fn := range c.opts.configure {
		fn(i, cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		c.t.Fatalf("start %s: %v", cfg.NodeName, err)
	}
	// Restarts reuse the ports the kernel picked.
	cfg.RPCAddr = s.RPCAddr().(*net.TCPAddr)
	cfg.SerfAddr = s.SerfAddr().(*net.TCPAddr)
	c.servers = append(c.servers, s)
	c.configs = append(c.configs, cfg)
	return i
}

// Add starts one more server, with the cluster's bootstrap_expect, joins
// it to the others through serf, and returns its index. The leader adds it
// to Raft.
func (c *testCluster) Add() int {
	c.t.Helper()
	i := c.start(c.configs[0].BootstrapExpect)
	c.join(i)
	return i
}

// join joins server i to the other live servers' serf addresses.
func (c *testCluster) join(i int) {
	c.t.Helper()
	var addrs []string
	for j, cfg := range c.configs {
		if j != i && c.servers[j] != nil {
			addrs = append(addrs, cfg.SerfAddr.String())
		}
	}
	if _, err := c.servers[i].Join(addrs); err != nil {
		c.t.Fatalf("join %s: %v", c.configs[i].NodeName, err)
	}
}

// fastSerf shortens serf's and memberlist's timings so that failures are
// noticed in about a second on loopback.
func fastSerf(conf *serf.Config) {
	ml := conf.MemberlistConfig
	ml.ProbeInterval = 200 * time.Millisecond
	ml.ProbeTimeout = 100 * time.Millisecond
	ml.SuspicionMult = 2
	ml.GossipInterval = 50 * time.Millisecond
	ml.PushPullInterval = time.Second
	ml.GossipToTheDeadTime = 2 * time.Second
	ml.TCPTimeout = time.Second
	conf.ReconnectInterval = 500 * time.Millisecond
	conf.ReapInterval = time.Second
	conf.LeavePropagateDelay = 100 * time.Millisecond
	// Queries (the keyring's) wait GossipInterval times this: long
	// enough on a loaded 2-core machine with the race detector.
	conf.QueryTimeoutMult = 100
}

func (c *testCluster) shutdownAll() {
	for i, s := range c.servers {
		if s == nil {
			continue
		}
		if err := c.shutdown(i, s); err != nil {
			c.t.Errorf("shut down %s: %v", c.configs[i].NodeName, err)
		}
		c.servers[i] = nil
	}
}

// Server returns server i, nil while it is killed.
func (c *testCluster) Server(i int) *Server { return c.servers[i] }

// Name returns server i's node name.
func (c *testCluster) Name(i int) string { return c.configs[i].NodeName }

// Index returns s's index in the cluster, or -1.
func (c *testCluster) Index(s *Server) int {
	for i, x := range c.servers {
		if x != nil && x == s {
			return i
		}
	}
	return -1
}

// reachable returns the indexes of the live servers outside any
// partition.
func (c *testCluster) reachable() []int {
	var out []int
	for i, s := range c.servers {
		if s != nil && !c.partitioned[i] {
			out = append(out, i)
		}
	}
	return out
}

// Leader returns the live, unpartitioned server that is the Raft leader
// now, or nil.
func (c *testCluster) Leader() *Server {
	for _, i := range c.reachable() {
		if c.servers[i].IsLeader() {
			return c.servers[i]
		}
	}
	return nil
}

// Followers returns the live, unpartitioned servers that are not the
// leader.
func (c *testCluster) Followers() []*Server {
	var out []*Server
	for _, i := range c.reachable() {
		if !c.servers[i].IsLeader() {
			out = append(out, c.servers[i])
		}
	}
	return out
}

// WaitForLeader waits until exactly one live, unpartitioned server leads
// with its duties running and every other one knows it, and returns it.
func (c *testCluster) WaitForLeader(timeout time.Duration) *Server {
	c.t.Helper()
	var leader *Server
	waitFor(c.t, timeout, func() (bool, string) {
		leader = nil
		var leaders []string
		for _, i := range c.reachable() {
			if s := c.servers[i]; s.IsLeader() && s.broker.Enabled() {
				leader = s
				leaders = append(leaders, c.Name(i))
			}
		}
		if len(leaders) != 1 {
			return false, fmt.Sprintf("want one working leader among the reachable servers, have %v", leaders)
		}
		want := leader.RPCAddr().String()
		for _, i := range c.reachable() {
			if got := c.servers[i].Leader(); got != want {
				return false, fmt.Sprintf("%s follows %q, want %q", c.Name(i), got, want)
			}
		}
		return true, ""
	})
	return leader
}

// WaitForVoters waits until every live, unpartitioned server's Raft
// configuration has n voters, the same ones.
func (c *testCluster) WaitForVoters(n int, timeout time.Duration) {
	c.t.Helper()
	waitFor(c.t, timeout, func() (bool, string) {
		var first string
		for _, i := range c.reachable() {
			ids := raftVoters(c.servers[i])
			if len(ids) != n {
				return false, fmt.Sprintf("%s has voters %v, want %d", c.Name(i), ids, n)
			}
			if got := strings.Join(ids, ","); first == "" {
				first = got
			} else if got != first {
				return false, fmt.Sprintf("%s has voters %s, another server %s", c.Name(i), got, first)
			}
		}
		return true, ""
	})
}

// raftVoters returns the IDs of the voters in s's latest Raft
// configuration, in configuration order.
func raftVoters(s *Server) []string {
	future := s.raft.GetConfiguration()
	if future.Error() != nil {
		return nil
	}
	var ids []string
	for _, srv := range future.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			ids = append(ids, string(srv.ID))
		}
	}
	return ids
}

// Kill shuts server i down abruptly: no serf leave, no Raft removal, as
// if its process died.
func (c *testCluster) Kill(i int) {
	c.t.Helper()
	s := c.servers[i]
	if s == nil {
		c.t.Fatalf("kill %s: already killed", c.Name(i))
	}
	c.servers[i] = nil
	if err := c.shutdown(i, s); err != nil {
		c.t.Errorf("kill %s: %v", c.Name(i), err)
	}
}

// slowShutdown is how long a Shutdown may take before the harness logs
// every goroutine's stack, to show what it waits for.
const slowShutdown = 10 * time.Second

// shutdown shuts server i down; a slow one gets its stacks logged.
func (c *testCluster) shutdown(i int, s *Server) error {
	done := make(chan error, 1)
	go func() { done <- s.Shutdown() }()
	select {
	case err := <-done:
		return err
	case <-time.After(slowShutdown):
		c.t.Logf("shutting down %s takes more than %s; goroutines:\n%s", c.Name(i), slowShutdown, stacks())
		return <-done
	}
}

// Restart starts killed server i again on its data dir and ports; it
// rejoins the others through serf (its snapshot and retry_join) and Raft.
func (c *testCluster) Restart(i int) *Server {
	c.t.Helper()
	if c.servers[i] != nil {
		c.t.Fatalf("restart %s: still running", c.Name(i))
	}
	cfg := *c.configs[i]
	cfg.RetryJoin = nil
	for j, other := range c.configs {
		if j != i {
			cfg.RetryJoin = append(cfg.RetryJoin, other.SerfAddr.String())
		}
	}
	cfg.RetryJoinInterval = 200 * time.Millisecond
	var s *Server
	waitFor(c.t, 5*time.Second, func() (bool, string) {
		var err error
		s, err = NewServer(&cfg) // its ports may linger a moment after the kill
		return err == nil, fmt.Sprintf("restart %s: %v", c.Name(i), err)
	})
	c.servers[i] = s
	return s
}

// Partition cuts server i off from every other server: Raft, RPC and
// serf traffic between them fails until Heal(i).
func (c *testCluster) Partition(i int) {
	c.t.Helper()
	c.partitioned[i] = true
	for j := range c.configs {
		if j != i {
			c.configs[i].partition.block(c.peerAddrs(j)...)
			c.configs[j].partition.block(c.peerAddrs(i)...)
		}
	}
}

// Heal reconnects server i with the servers outside any partition.
func (c *testCluster) Heal(i int) {
	c.t.Helper()
	delete(c.partitioned, i)
	for j := range c.configs {
		if j != i && !c.partitioned[j] {
			c.configs[i].partition.unblock(c.peerAddrs(j)...)
			c.configs[j].partition.unblock(c.peerAddrs(i)...)
		}
	}
}

// peerAddrs are the addresses other servers reach server i at.
func (c *testCluster) peerAddrs(i int) []string {
	return []string{c.configs[i].RPCAddr.String(), c.configs[i].SerfAddr.String()}
}
