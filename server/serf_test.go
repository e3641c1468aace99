package server

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/serf/serf"

	"github.com/droverhq/drover/structs"
)

// TestSerf_LoneServerIsAMember: a dev server runs serf too and lists
// itself, alive, with its tags.
func TestSerf_LoneServerIsAMember(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg)
	if port := s.SerfAddr().(*net.TCPAddr).Port; port == 0 || port == DefaultSerfPort {
		t.Errorf("serf port = %d, want a free one (the RPC port was 0)", port)
	}
	resp := s.Members()
	if resp.ServerName != "server-1" || resp.ServerRegion != "global" || resp.ServerDC != "dc1" {
		t.Errorf("members header = %+v", resp)
	}
	if len(resp.Members) != 1 {
		t.Fatalf("members = %+v, want 1", resp.Members)
	}
	m := resp.Members[0]
	want := map[string]string{
		serfTagRole: serfRoleServer, serfTagID: string(s.raftID), serfTagRPCAddr: s.RPCAddr().String(),
		serfTagRegion: "global", serfTagDC: "dc1", serfTagBootstrapExpect: "1",
	}
	for k, v := range want {
		if m.Tags[k] != v {
			t.Errorf("tag %s = %q, want %q", k, m.Tags[k], v)
		}
	}
	if m.Name != "server-1.global" || m.Status != "alive" || m.Addr != "127.0.0.1" || int(m.Port) != s.SerfAddr().(*net.TCPAddr).Port {
		t.Errorf("member = %+v", m)
	}
}

func TestSerf_JoinErrors(t *testing.T) {
	s := startServer(t, testConfig(t))
	if _, err := s.Join(nil); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("Join(nil): err = %v, want ErrInvalid", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if n, err := s.Join([]string{closed}); err == nil || n != 0 {
		t.Errorf("Join(%s) = %d, %v; want an error", closed, n, err)
	}
}

// TestSerf_RetryJoinAddsServerToRaft: a server with bootstrap_expect 0
// and retry_join keeps trying past a dead address, joins the pool, and
// the leader adds it to Raft.
func TestSerf_RetryJoinAddsServerToRaft(t *testing.T) {
	cfg := testConfig(t)
	cfg.reconcileInterval = 100 * time.Millisecond
	first := startServer(t, cfg)

	cfg2 := testConfig(t)
	cfg2.NodeName = "server-2"
	cfg2.BootstrapExpect = 0
	cfg2.RetryJoin = []string{"127.0.0.1:1", first.SerfAddr().String()}
	cfg2.RetryJoinInterval = 100 * time.Millisecond
	second := startServer(t, cfg2)

	waitFor(t, 10*time.Second, func() (bool, string) {
		ids := raftVoters(first)
		return len(ids) == 2 && raftVoters(second) != nil && len(raftVoters(second)) == 2,
			fmt.Sprintf("voters: leader %v, joiner %v", ids, raftVoters(second))
	})
	if second.IsLeader() {
		t.Error("the joining server leads")
	}
}

// TestSerf_MismatchedBootstrapExpectDoesNotBootstrap: servers that expect
// different cluster sizes never bootstrap together.
func TestSerf_MismatchedBootstrapExpectDoesNotBootstrap(t *testing.T) {
	var servers []*Server
	for i, expect := range []int{2, 3} {
		cfg := testConfig(t)
		cfg.NodeName = fmt.Sprintf("server-%d", i+1)
		cfg.BootstrapExpect = expect
		servers = append(servers, startServer(t, cfg))
	}
	if _, err := servers[1].Join([]string{servers[0].SerfAddr().String()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		return len(servers[0].Members().Members) == 2, "the servers never met"
	})
	// Server 1 (expect 2) sees two servers but one expects 3: it must not
	// bootstrap; server 2 (expect 3) sees too few. Raft would have index
	// 1 after a bootstrap. (The join event may still be in flight here: a
	// wrong bootstrap would then go unseen, never falsely reported.)
	for _, s := range servers {
		if s.raft.LastIndex() != 0 || s.bootstrapped.Load() {
			t.Errorf("%s bootstrapped with a mismatched bootstrap_expect", s.config.NodeName)
		}
	}
}

// TestCluster_ShutdownLeavesNoGoroutines: a cluster formed, faulted and
// shut down leaves none of its goroutines behind (serf, memberlist, the
// partition filter and the leader's reconciliation included).
func TestCluster_ShutdownLeavesNoGoroutines(t *testing.T) {
	baseline := runtime.NumGoroutine()
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	c.Partition(c.Index(c.Followers()[0]))
	registerJob(t, leader, gpuJob("j", structs.JobTypeBatch, 1, 1))
	c.shutdownAll()
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= baseline, fmt.Sprintf("%d goroutines, %d before the cluster started:\n%s", n, baseline, stacks())
	})
}

func TestParseServerMember(t *testing.T) {
	tags := map[string]string{serfTagRole: serfRoleServer, serfTagID: "id1", serfTagRPCAddr: "10.0.0.1:4647",
		serfTagRegion: "eu", serfTagDC: "dc2", serfTagBootstrapExpect: "3"}
	got, ok := parseServerMember(serf.Member{Name: "s1.eu", Tags: tags, Status: serf.StatusFailed})
	want := serverMember{Name: "s1.eu", ID: "id1", RPCAddr: "10.0.0.1:4647", Region: "eu", Datacenter: "dc2",
		BootstrapExpect: 3, Status: serf.StatusFailed}
	if !ok || got != want {
		t.Errorf("parseServerMember = %+v, %v; want %+v", got, ok, want)
	}
	for _, drop := range []string{serfTagRole, serfTagID, serfTagRPCAddr} {
		partial := map[string]string{}
		for k, v := range tags {
			if k != drop {
				partial[k] = v
			}
		}
		if _, ok := parseServerMember(serf.Member{Tags: partial}); ok {
			t.Errorf("member without %s parsed as a server", drop)
		}
	}
}

// TestPeerFilter: a blocked address refuses dials, and blocking closes
// the connections already dialed to it; unblocking lets dials through.
func TestPeerFilter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := ln.Addr().String()
	f := newPeerFilter()
	conn, err := f.dial(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	defer peer.Close()

	f.block(addr)
	if _, err := f.dial(addr, time.Second); err == nil {
		t.Error("dial to a blocked address succeeded")
	}
	_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); err == nil {
		t.Error("the connection dialed before the block still carries data")
	}
	if _, err := conn.Write([]byte("x")); err == nil {
		t.Error("write on a connection cut by the block succeeded")
	}
	if f.allows(addr) {
		t.Error("allows a blocked address")
	}

	f.unblock(addr)
	conn2, err := f.dial(addr, time.Second)
	if err != nil {
		t.Fatalf("dial after unblock: %v", err)
	}
	conn2.Close()
	(<-accepted).Close()
	var nilFilter *peerFilter
	if !nilFilter.allows(addr) {
		t.Error("a nil filter blocks")
	}
}

// TestSerf_UnspecifiedBindAdvertisesLikeRPC: bound to 0.0.0.0, serf
// advertises the same IP as the RPC address, so a member's gossip and
// RPC addresses name the same host.
func TestSerf_UnspecifiedBindAdvertisesLikeRPC(t *testing.T) {
	cfg := testConfig(t)
	cfg.RPCAddr = &net.TCPAddr{IP: net.IPv4zero}
	cfg.SerfAddr = &net.TCPAddr{IP: net.IPv4zero}
	s := startServer(t, cfg)
	m := s.Members().Members
	rpcIP := s.RPCAddr().(*net.TCPAddr).IP.String()
	if len(m) != 1 || m[0].Addr != rpcIP {
		t.Errorf("member = %+v, want it advertised at the RPC IP %s", m, rpcIP)
	}
}
