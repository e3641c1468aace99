package server

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestCluster_ThreeServersFormOneConfiguration: three servers with
// bootstrap_expect = 3, joined through serf, bootstrap one Raft
// configuration of three voters that every server agrees on.
func TestCluster_ThreeServersFormOneConfiguration(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)

	var want []string
	for i := range 3 {
		want = append(want, string(c.Server(i).raftID))
	}
	sort.Strings(want)
	for i := range 3 {
		s := c.Server(i)
		got := raftVoters(s)
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s voters = %v, want %v", c.Name(i), got, want)
		}
		if peers := s.Peers(); len(peers) != 3 {
			t.Errorf("%s Peers() = %v, want 3 RPC addresses", c.Name(i), peers)
		}
		if got := s.Leader(); got != leader.RPCAddr().String() {
			t.Errorf("%s Leader() = %q, want %q", c.Name(i), got, leader.RPCAddr())
		}
	}

	// Every server sees the three in serf, alive, with their tags.
	members := c.Server(1).Members()
	if len(members.Members) != 3 {
		t.Fatalf("members = %+v, want 3", members.Members)
	}
	for _, m := range members.Members {
		if m.Status != "alive" || m.Tags[serfTagRole] != serfRoleServer || m.Tags[serfTagRegion] != "global" ||
			m.Tags[serfTagBootstrapExpect] != "3" || m.Tags[serfTagID] == "" || m.Tags[serfTagRPCAddr] == "" {
			t.Errorf("member %+v: want alive server with id, rpc_addr, region and bootstrap_expect tags", m)
		}
	}

	// The configuration as operators read it names the leader.
	conf, err := c.Server(2).RaftConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	leaders := 0
	for _, srv := range conf.Servers {
		if srv.Leader {
			leaders++
			if srv.Address != leader.RPCAddr().String() {
				t.Errorf("leader in configuration is %s, want %s", srv.Address, leader.RPCAddr())
			}
		}
		if !srv.Voter || srv.Node == "" || srv.RaftProtocol != "3" {
			t.Errorf("raft server %+v: want a named voter speaking protocol 3", srv)
		}
	}
	if leaders != 1 || conf.Index == 0 {
		t.Errorf("configuration %+v: want one leader and an index", conf)
	}

	// A write on the leader reaches every server.
	registerJob(t, leader, gpuJob("formed", structs.JobTypeBatch, 1, 1))
	waitForJob(t, c, "formed")
}

// TestCluster_FiveServersForm: five servers form one cluster, which keeps
// a leader and takes writes with two of them killed.
func TestCluster_FiveServersForm(t *testing.T) {
	c := newTestCluster(t, 5)
	leader := c.WaitForLeader(5 * time.Second)
	killed := 0
	for i := range 5 {
		if c.Server(i) != leader && killed < 2 {
			c.Kill(i)
			killed++
		}
	}
	leader = c.WaitForLeader(10 * time.Second)
	registerJob(t, leader, gpuJob("five", structs.JobTypeBatch, 1, 1))
	waitForJob(t, c, "five")
}

// TestCluster_LateServerJoinsWithoutBootstrapping: a fourth server with
// the same bootstrap_expect finds Raft state on the others, does not
// bootstrap a cluster of its own, and the leader adds it as a voter.
func TestCluster_LateServerJoinsWithoutBootstrapping(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	registerJob(t, leader, gpuJob("before", structs.JobTypeBatch, 1, 1))

	// All four agree on four voters and one leader (a late server that
	// bootstrapped alone would lead a cluster of its own), and the late
	// one has the earlier write.
	c.Add()
	c.WaitForVoters(4, 10*time.Second)
	c.WaitForLeader(5 * time.Second)
	waitForJob(t, c, "before")
}

// waitForJob waits until every live, unpartitioned server has the job.
func waitForJob(t *testing.T, c *testCluster, id string) {
	t.Helper()
	waitFor(t, 10*time.Second, func() (bool, string) {
		for _, i := range c.reachable() {
			job, err := c.Server(i).State().JobByID(nil, structs.DefaultNamespace, id)
			if err != nil || job == nil {
				return false, c.Name(i) + " does not have job " + id
			}
		}
		return true, ""
	})
}
