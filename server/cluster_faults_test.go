package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestCluster_KillLeaderElectsNewLeader: after the leader dies, another
// server leads within 10 s with every job registered before, takes new
// writes, and the old leader, restarted, follows it and catches up.
func TestCluster_KillLeaderElectsNewLeader(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	var jobs []string
	for i := range 5 {
		id := fmt.Sprintf("before-%d", i)
		registerJob(t, leader, gpuJob(id, structs.JobTypeBatch, 1, 1))
		jobs = append(jobs, id)
	}

	old := c.Index(leader)
	killed := time.Now()
	c.Kill(old)
	next := c.WaitForLeader(10 * time.Second)
	t.Logf("new leader after %s", time.Since(killed).Round(time.Millisecond))
	for _, id := range jobs {
		if job, err := next.State().JobByID(nil, structs.DefaultNamespace, id); err != nil || job == nil {
			t.Errorf("new leader lost job %s (err %v)", id, err)
		}
	}
	registerJob(t, next, gpuJob("after", structs.JobTypeBatch, 1, 1))

	// Restarted on its data, the old leader rejoins the one cluster (all
	// three follow one leader) and catches up with the write it missed.
	c.Restart(old)
	c.WaitForLeader(10 * time.Second)
	waitForJob(t, c, "after")
	c.WaitForVoters(3, 5*time.Second)
}

// TestCluster_PartitionedLeaderStepsDown: a leader cut off from the others
// steps down, the majority elects a new leader and takes writes, and once
// healed the old leader follows the new one with the new entries.
func TestCluster_PartitionedLeaderStepsDown(t *testing.T) {
	// The cut-off server's write fails once it gave up waiting for a
	// leader: keep that wait short.
	c := newTestCluster(t, 3, withServerConfig(func(_ int, cfg *Config) { cfg.RPCHoldTimeout = time.Second }))
	leader := c.WaitForLeader(5 * time.Second)
	registerJob(t, leader, gpuJob("before", structs.JobTypeBatch, 1, 1))
	waitForJob(t, c, "before")

	old := c.Index(leader)
	c.Partition(old)
	waitFor(t, 10*time.Second, func() (bool, string) {
		return !leader.IsLeader(), "the partitioned leader still leads"
	})
	next := c.WaitForLeader(10 * time.Second)
	if next == leader {
		t.Fatal("the partitioned server leads the majority")
	}
	registerJob(t, next, gpuJob("during", structs.JobTypeBatch, 1, 1))
	if job, _ := leader.State().JobByID(nil, structs.DefaultNamespace, "during"); job != nil {
		t.Fatal("the partitioned server received a write")
	}
	// A write on the cut-off server cannot commit.
	var resp structs.JobRegisterResponse
	err := leader.RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: gpuJob("lost", structs.JobTypeBatch, 1, 1)}, &resp)
	if err == nil {
		t.Fatal("the partitioned server acknowledged a write")
	}

	// Healed, the old leader follows: its log lacks "during", so it cannot
	// win an election (and pre-vote keeps it from disrupting the leader).
	c.Heal(old)
	if got := c.WaitForLeader(15 * time.Second); got == leader {
		t.Errorf("the old leader, whose log is behind, leads again after the heal")
	}
	waitForJob(t, c, "during")
	c.WaitForVoters(3, 10*time.Second)
	for _, i := range c.reachable() {
		if job, _ := c.Server(i).State().JobByID(nil, structs.DefaultNamespace, "lost"); job != nil {
			t.Errorf("%s has the job the partitioned server refused", c.Name(i))
		}
	}
}
