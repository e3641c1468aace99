package server

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestCluster_ForceLeaveRemovesFailedServer: force-leave of a dead
// server makes the leader remove it from Raft at once (long before the
// dead server timeout); restarted, it rejoins and is added back.
func TestCluster_ForceLeaveRemovesFailedServer(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	victim := c.Index(c.Followers()[0])
	id := string(c.Server(victim).raftID)
	c.Kill(victim)
	// Through the other follower: it must see the victim failed first.
	other := c.Followers()[0]
	waitForMemberStatus(t, other, c.Name(victim)+".global", "failed")
	if err := other.ForceLeave(c.Name(victim), false); err != nil {
		t.Fatalf("ForceLeave: %v", err)
	}
	c.WaitForVoters(2, 5*time.Second)
	if slices.Contains(raftVoters(leader), id) {
		t.Fatalf("force-left server %s still a voter", id)
	}

	c.Restart(victim)
	c.WaitForVoters(3, 10*time.Second)
}

// TestCluster_ForceLeaveRefusesAliveOrUnknown: force-leave is for failed
// servers; an alive or unknown one is a clear error.
func TestCluster_ForceLeaveRefusesAliveOrUnknown(t *testing.T) {
	c := newTestCluster(t, 3)
	s := c.Server(0)
	if err := s.ForceLeave(c.Name(1), false); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("force-leave of an alive server: err = %v, want ErrInvalid", err)
	}
	if err := s.ForceLeave("nope", false); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("force-leave of an unknown server: err = %v, want ErrNotFound", err)
	}
	c.WaitForVoters(3, time.Second)
}

// TestCluster_RemoveRaftPeer: the leader removes a dead peer by ID or by
// address (restarted in between, the peer is added back); a follower
// refuses with ErrNotLeader; unknown peers are ErrNotFound.
func TestCluster_RemoveRaftPeer(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	follower := c.Followers()[0]
	victim := c.Index(c.Followers()[1])
	id := string(c.Server(victim).raftID)
	addr := c.Server(victim).RPCAddr().String()
	c.Kill(victim)

	if err := follower.RemoveRaftPeer(id, ""); !errors.Is(err, structs.ErrNotLeader) {
		t.Errorf("remove-peer on a follower: err = %v, want ErrNotLeader", err)
	}
	if err := leader.RemoveRaftPeer("no-such-id", ""); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("remove-peer of an unknown ID: err = %v, want ErrNotFound", err)
	}
	if err := leader.RemoveRaftPeer("", "127.0.0.1:1"); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("remove-peer of an unknown address: err = %v, want ErrNotFound", err)
	}
	if err := leader.RemoveRaftPeer("", ""); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("remove-peer without a peer: err = %v, want ErrInvalid", err)
	}
	if err := leader.RemoveRaftPeer(id, ""); err != nil {
		t.Fatalf("remove-peer by ID: %v", err)
	}
	c.WaitForVoters(2, 5*time.Second)

	c.Restart(victim)
	c.WaitForVoters(3, 10*time.Second)
	c.Kill(victim)
	// Through RPC on the follower: it forwards the change to the leader.
	var resp structs.GenericResponse
	if err := follower.RPC(structs.RPCClusterRemoveRaftPeer, &structs.RaftPeerRemoveRequest{Address: addr}, &resp); err != nil {
		t.Fatalf("remove-peer by address through a follower: %v", err)
	}
	if resp.Index == 0 {
		t.Errorf("remove-peer answered index 0")
	}
	c.WaitForVoters(2, 5*time.Second)
	if slices.Contains(raftVoters(leader), id) {
		t.Errorf("removed peer %s is still a voter", id)
	}
}

// TestCluster_DeadServerReapedAfterTimeout: the leader removes a server
// that stays failed for the dead server timeout, and not sooner.
func TestCluster_DeadServerReapedAfterTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	c := newTestCluster(t, 3, withDeadServerTimeout(timeout))
	leader := c.WaitForLeader(5 * time.Second)
	victim := c.Index(c.Followers()[0])
	id := string(c.Server(victim).raftID)
	killed := time.Now()
	c.Kill(victim)
	waitFor(t, timeout+10*time.Second, func() (bool, string) {
		return !slices.Contains(raftVoters(leader), id), "dead server still a voter"
	})
	if took := time.Since(killed); took < timeout {
		t.Errorf("dead server removed after %s, before the %s timeout", took, timeout)
	}
	c.WaitForVoters(2, 5*time.Second)
	registerJob(t, c.WaitForLeader(5*time.Second), gpuJob("after-reap", structs.JobTypeBatch, 1, 1))
}

// TestCluster_GracefulLeave: a follower that leaves is removed from Raft
// at once; a leader that leaves hands leadership over.
func TestCluster_GracefulLeave(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	follower := c.Followers()[0]
	if err := follower.Leave(); err != nil {
		t.Fatalf("follower Leave: %v", err)
	}
	c.Kill(c.Index(follower))
	c.WaitForVoters(2, 5*time.Second)

	if err := leader.Leave(); err != nil {
		t.Fatalf("leader Leave: %v", err)
	}
	c.Kill(c.Index(leader))
	next := c.WaitForLeader(10 * time.Second)
	if got := raftVoters(next); len(got) != 1 || got[0] != string(next.raftID) {
		t.Errorf("voters after both left = %v, want only %s", got, next.raftID)
	}
}

// waitForMemberStatus waits until s sees the serf member name in status.
func waitForMemberStatus(t *testing.T, s *Server, name, status string) {
	t.Helper()
	waitFor(t, 10*time.Second, func() (bool, string) {
		for _, m := range s.Members().Members {
			if m.Name == name {
				return m.Status == status, name + " is " + m.Status + ", want " + status
			}
		}
		return false, name + " is not a member"
	})
}
