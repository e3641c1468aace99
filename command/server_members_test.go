package command

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/command/agent"
	"github.com/droverhq/drover/drivers/drivertest"
)

// startServerAgents starts n server-only agents expecting a cluster of n
// on free loopback ports, not yet joined, and returns them with their
// HTTP addresses.
func startServerAgents(t *testing.T, n int) ([]*agent.Agent, []string) {
	t.Helper()
	var agents []*agent.Agent
	var addrs []string
	for i := range n {
		cfg := agent.DefaultConfig()
		cfg.Name = fmt.Sprintf("srv-%d", i+1)
		cfg.BindAddr = "127.0.0.1"
		cfg.Ports = &agent.PortsConfig{}
		cfg.DataDir = drivertest.ReachableTempDir(t)
		cfg.LogLevel = "WARN"
		cfg.Server.Enabled = true
		cfg.Server.BootstrapExpect = n
		a, err := agent.NewAgent(cfg, io.Discard)
		if err != nil {
			t.Fatalf("start agent %d: %v", i, err)
		}
		t.Cleanup(func() { _ = a.Shutdown() }) // a second Shutdown is harmless
		agents = append(agents, a)
		addrs = append(addrs, "http://"+a.HTTPAddr())
	}
	return agents, addrs
}

// TestServerCommands forms a cluster of three real server agents with
// `server join`, lists it with `server members` and `operator raft
// list-peers`, and checks the refusals of `force-leave` and
// `remove-peer`, then removes a dead peer.
func TestServerCommands(t *testing.T) {
	agents, addrs := startServerAgents(t, 3)

	code, out, errOut := run(t, addrs[0], "server", "members", "-json")
	if code != 0 {
		t.Fatalf("members -json: exit %d: %s", code, errOut)
	}
	var self api.ServerMembers
	if err := json.Unmarshal([]byte(out), &self); err != nil || len(self.Members) != 1 {
		t.Fatalf("members -json = %q (%v), want one member", out, err)
	}
	serfAddr := fmt.Sprintf("%s:%d", self.Members[0].Addr, self.Members[0].Port)
	for _, addr := range addrs[1:] {
		code, out, errOut := run(t, addr, "server", "join", serfAddr)
		if code != 0 || !strings.Contains(out, "Joined 1 server successfully") {
			t.Fatalf("server join: exit %d, out %q, err %q", code, out, errOut)
		}
	}
	// Every server knows the leader before the listings: a follower
	// learns it from the leader's first message, a moment after the
	// election.
	var leader string
	for _, addr := range addrs {
		leader = waitForClusterLeader(t, addr, 3)
	}

	code, out, _ = run(t, addrs[1], "server", "members")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "Name") {
		t.Fatalf("server members: exit %d:\n%s", code, out)
	}
	leaders := 0
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 8 || f[3] != "alive" || f[6] != "dc1" || f[7] != "global" || !strings.HasPrefix(f[0], "srv-") {
			t.Errorf("members row %q", l)
		}
		if f[4] == "true" {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("members show %d leaders:\n%s", leaders, out)
	}

	code, out, _ = run(t, addrs[0], "operator", "raft", "list-peers")
	if code != 0 || strings.Count(out, "follower") != 2 || strings.Count(out, "leader") != 1 || !strings.Contains(out, leader) {
		t.Errorf("list-peers: exit %d:\n%s", code, out)
	}

	refusals := []struct {
		args []string
		want string
	}{
		{[]string{"server", "force-leave", "srv-2"}, "alive"},
		{[]string{"server", "force-leave", "nope"}, "no such server"},
		{[]string{"server", "force-leave"}, "one argument"},
		{[]string{"server", "join"}, "at least one argument"},
		{[]string{"server", "join", "127.0.0.1:1"}, "Error joining 127.0.0.1:1"},
		{[]string{"operator", "raft", "remove-peer"}, "exactly one of -peer-id and -peer-address"},
		{[]string{"operator", "raft", "remove-peer", "-peer-id=a", "-peer-address=b"}, "exactly one"},
		{[]string{"operator", "raft", "remove-peer", "-peer-id=no-such-peer"}, "no peer with id no-such-peer"},
	}
	for _, r := range refusals {
		code, out, errOut := run(t, addrs[1], r.args...)
		if code == 0 || !strings.Contains(errOut, r.want) {
			t.Errorf("%s: exit %d, out %q, err %q; want non-zero and %q", strings.Join(r.args, " "), code, out, errOut, r.want)
		}
	}

	// A dead server's peer is removed through the other follower, which
	// forwards the change to the leader.
	var conf api.RaftConfiguration
	code, out, _ = run(t, addrs[0], "operator", "raft", "list-peers", "-json")
	if err := json.Unmarshal([]byte(out), &conf); code != 0 || err != nil || len(conf.Servers) != 3 {
		t.Fatalf("list-peers -json: exit %d, %v: %q", code, err, out)
	}
	var followers []int // agent indexes, from the "srv-N.global" node names
	var deadRPC string
	for _, s := range conf.Servers {
		var n int
		if _, err := fmt.Sscanf(s.Node, "srv-%d.global", &n); err != nil {
			t.Fatalf("node name %q: %v", s.Node, err)
		}
		if !s.Leader {
			followers = append(followers, n-1)
			if deadRPC == "" {
				deadRPC = s.Address
			}
		}
	}
	if err := agents[followers[0]].Shutdown(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, addrs[followers[1]], "operator", "raft", "remove-peer", "-peer-address="+deadRPC)
	if code != 0 || !strings.Contains(out, "Removed the peer with address "+deadRPC) {
		t.Errorf("remove-peer: exit %d, out %q, err %q", code, out, errOut)
	}
}

// waitForClusterLeader waits until the agent at addr knows a leader and n
// Raft peers, and returns the leader's RPC address.
func waitForClusterLeader(t *testing.T, addr string, n int) string {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		leader, _ := c.Status().Leader(context.Background())
		peers, _ := c.Status().Peers(context.Background())
		if leader != "" && len(peers) == n {
			return leader
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader with %d peers: leader %q, peers %v", n, leader, peers)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
