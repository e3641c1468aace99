package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

// sleepJob is a service job of count raw_exec tasks that sleep, killed
// at once when stopped.
func sleepJob(id string, count int) *structs.Job {
	job := &structs.Job{
		ID: id, Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: count,
			Tasks: []*structs.Task{{
				Name: "t", Driver: "raw_exec", KillTimeout: 100 * time.Millisecond,
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"30"}},
				Resources: &structs.Resources{CPU: 20, MemoryMB: 16},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// jobSummary reads a job's summary through the Job.Summary endpoint.
func jobSummary(t *testing.T, s *Server, id string) structs.TaskGroupSummary {
	t.Helper()
	var resp structs.JobSummaryResponse
	if err := s.RPC(structs.RPCJobSummary, &structs.JobSpecificRequest{JobID: id}, &resp); err != nil {
		t.Fatalf("Job.Summary %s: %v", id, err)
	}
	return resp.JobSummary.Summary["g"]
}

// unsettled describes the job's allocations that are not finished, or
// "" when every one is.
func unsettled(t *testing.T, s *Server, jobID string) string {
	t.Helper()
	all, err := s.State().AllocsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		if !a.ClientTerminalStatus() {
			return fmt.Sprintf("job %s: alloc %s desired %s client %s", jobID, a.ID, a.DesiredStatus, a.ClientStatus)
		}
	}
	return ""
}

// TestStoppedBeforeRun_BecomesComplete: a job stopped while its client
// is away (registered and ready, its agent not yet watching) leaves
// allocations stopped and pending; once the client is back, it reports
// them complete without running them, and the summary says Complete,
// not Starting.
func TestStoppedBeforeRun_BecomesComplete(t *testing.T) {
	s := startServer(t, testConfig(t))
	servers := []string{s.RPCAddr().String()}
	dir := drivertest.ReachableTempDir(t)
	cl := startClient(t, "slow", dir, servers, false)
	waitFor(t, 10*time.Second, func() (bool, string) {
		return nodeStatus(t, s, cl.NodeID()) == structs.NodeStatusReady, "client not registered"
	})
	if err := cl.Shutdown(); err != nil { // the node stays ready for its TTL
		t.Fatal(err)
	}

	registerJob(t, s, sleepJob("early", 2))
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := len(liveAllocs(t, s, "early"))
		return n == 2, fmt.Sprintf("%d allocations placed, want 2", n)
	})
	var dereg structs.JobDeregisterResponse
	if err := s.RPC(structs.RPCJobDeregister, &structs.JobDeregisterRequest{JobID: "early"}, &dereg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := len(liveAllocs(t, s, "early"))
		return n == 0, fmt.Sprintf("%d allocations still meant to run", n)
	})
	if got := jobSummary(t, s, "early"); got.Starting != 2 {
		t.Fatalf("summary before the client is back: %+v, want 2 starting", got)
	}

	startClient(t, "slow", dir, servers, false)
	waitFor(t, 10*time.Second, func() (bool, string) {
		msg := unsettled(t, s, "early")
		return msg == "", msg
	})
	all, _ := s.State().AllocsByJob(nil, structs.DefaultNamespace, "early")
	for _, a := range all {
		if a.ClientStatus != structs.AllocClientStatusComplete || a.ClientDescription != "allocation stopped before it ran" {
			t.Errorf("alloc %s: client %s (%q), want complete, stopped before it ran", a.ID, a.ClientStatus, a.ClientDescription)
		}
	}
	if got := jobSummary(t, s, "early"); got.Complete != 2 || got.Starting != 0 {
		t.Errorf("summary: %+v, want 2 complete, none starting", got)
	}
}

// TestRegisterDeregisterChurn: writers register and deregister the same
// jobs concurrently against a server with a real client. Once the last
// deregistration is in and things settle, no allocation is left stopped
// and pending (or running), and no summary shows Starting or Running.
func TestRegisterDeregisterChurn(t *testing.T) {
	const jobs, rounds = 3, 8
	s := startServer(t, testConfig(t))
	cl := startClient(t, "churn", drivertest.ReachableTempDir(t), []string{s.RPCAddr().String()}, false)
	waitFor(t, 10*time.Second, func() (bool, string) {
		return nodeStatus(t, s, cl.NodeID()) == structs.NodeStatusReady, "client not registered"
	})
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = fmt.Sprintf("churn-%d", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*jobs*rounds)
	for _, id := range ids {
		for w := range 2 { // two writers per job: each registers and at once deregisters it
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					job := sleepJob(id, 1+(r+w)%3)
					if err := s.RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
						errs <- fmt.Errorf("register %s: %w", id, err)
					}
					err := s.RPC(structs.RPCJobDeregister, &structs.JobDeregisterRequest{JobID: id}, &structs.JobDeregisterResponse{})
					if err != nil && structs.CodeOf(err) != structs.CodeNotFound {
						errs <- fmt.Errorf("deregister %s: %w", id, err)
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, id := range ids { // the last word: stopped
		var resp structs.JobDeregisterResponse
		if err := s.RPC(structs.RPCJobDeregister, &structs.JobDeregisterRequest{JobID: id}, &resp); err != nil {
			t.Fatalf("final deregister %s: %v", id, err)
		}
	}

	total := 0
	for _, id := range ids {
		waitFor(t, 30*time.Second, func() (bool, string) {
			msg := unsettled(t, s, id)
			return msg == "", msg
		})
		all, _ := s.State().AllocsByJob(nil, structs.DefaultNamespace, id)
		total += len(all)
		if got := jobSummary(t, s, id); got.Starting != 0 || got.Running != 0 {
			t.Errorf("job %s summary: %+v, want none starting or running", id, got)
		}
	}
	t.Logf("%d allocations placed and stopped across %d jobs", total, jobs)
	if total == 0 {
		t.Error("no allocation was ever placed: the churn tested nothing")
	}
}
