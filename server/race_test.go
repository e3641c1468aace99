package server

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// Sizes of the race: raceJobs jobs of one allocation (1 or 2 GPUs each,
// alternating) for raceNodes nodes of raceGPUs GPUs, planned by
// raceWorkers scheduler workers at once.
const (
	raceWorkers = 8
	raceNodes   = 2
	raceGPUs    = 4
	raceJobs    = 40
	raceClients = 10 // goroutines registering the jobs
)

// TestServer_WorkersRaceForFewGPUs has many scheduler workers plan, from
// overlapping snapshots, jobs that want more GPUs than the cluster has.
// The plan applier must reject the parts that conflict (and say so in its
// counters, proving the race happened), the workers retry from fresher
// state, and in the end no GPU is held twice, every GPU is held, and each
// job left out is blocked on GPU exhaustion.
func TestServer_WorkersRaceForFewGPUs(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.NumSchedulers = raceWorkers
	cfg.HeartbeatTTL = 5 * time.Minute // no client heartbeats here
	s := startServer(t, cfg)
	c := dialRPC(t, s.RPCAddr())
	nodes := map[string]*structs.Node{}
	var first *structs.Node
	for i := range raceNodes {
		n := gpuNode(fmt.Sprintf("race-%d", i), raceGPUs)
		registerNode(t, c, n)
		nodes[n.ID] = n
		first = cmp.Or(first, n)
	}

	jobs := registerRaceJobs(t, s)
	waitSettled(t, s, jobs)
	held := checkGPUsHeldOnce(t, s, nodes, jobs)
	total := raceNodes * raceGPUs
	st := s.applier.Stats()
	if st.PartialCommits == 0 || st.RejectedNodes == 0 {
		t.Errorf("applier stats = %+v, want conflicting plans rejected (the race never happened)", st)
	}
	// A worker whose plans lose maxPlanAttempts times in a row leaves a
	// max-plan-attempts blocked evaluation without a failure metric (it
	// was stopped by contention, not capacity, as in Nomad), which the
	// broker retries after MaxPlansRetryWait. So once settled, every job
	// left out is blocked for capacity, and contention left no GPU free.
	var unplaced, contended int
	for id := range jobs {
		if len(liveAllocs(t, s, id)) > 0 {
			continue
		}
		unplaced++
		if e := latestEval(t, s, id); e.TriggeredBy == structs.EvalTriggerMaxPlans {
			contended++
		}
	}
	if got := s.blocked.Stats().TotalBlocked; got != unplaced {
		t.Errorf("blocked evals tracked = %d, want %d (jobs not placed)", got, unplaced)
	}
	if contended != 0 {
		t.Errorf("%d jobs left blocked by max plan attempts after settling, want them retried", contended)
	}
	if len(held) != total {
		t.Errorf("GPUs held = %d, want all %d", len(held), total)
	}
	t.Logf("race: %d jobs placed on %d GPUs, %d blocked (%d by max plan attempts); applier %+v",
		raceJobs-unplaced, len(held), unplaced, contended, st)

	// A capacity change that adds nothing (a node registers again) wakes
	// every blocked evaluation: the GPUs contention left free (if any) are
	// taken, no GPU changes hands, and each job left out finds none free
	// and explains itself.
	registerNode(t, c, first)
	waitSettled(t, s, jobs)
	again := checkGPUsHeldOnce(t, s, nodes, jobs)
	for g, alloc := range held {
		if again[g] != alloc {
			t.Errorf("GPU %s moved from alloc %s to %q after a no-op capacity change", g, alloc, again[g])
		}
	}
	if len(again) != total {
		t.Errorf("GPUs held = %d, want all %d", len(again), total)
	}
	for id := range jobs {
		if len(liveAllocs(t, s, id)) == 0 {
			checkBlockedOnGPUs(t, s, id)
		}
	}
}

// checkGPUsHeldOnce checks that each job has at most one live allocation
// holding the GPUs it asked for, on its own node, and that no GPU is held
// twice. It returns the holder of each GPU held.
func checkGPUsHeldOnce(t *testing.T, s *Server, nodes map[string]*structs.Node, jobs map[string]int) map[string]string {
	t.Helper()
	held := map[string]string{} // GPU ID -> alloc ID
	assigned := 0
	for id, want := range jobs {
		live := liveAllocs(t, s, id)
		if len(live) > 1 {
			t.Errorf("job %s has %d live allocations, want at most 1", id, len(live))
		}
		for _, a := range live {
			ids := a.DeviceIDs()
			assigned += len(ids)
			if len(ids) != want {
				t.Errorf("alloc %s of %s holds %d GPUs %v, want %d", a.ID, id, len(ids), ids, want)
			}
			onNode := nodes[a.NodeID].NodeResources.Devices[0].SortedDeviceIDs()
			for _, g := range ids {
				if other, ok := held[g]; ok {
					t.Errorf("GPU %s held by allocs %s and %s", g, other, a.ID)
				}
				held[g] = a.ID
				if !slices.Contains(onNode, g) {
					t.Errorf("alloc %s holds GPU %s, not on its node %s", a.ID, g, a.NodeID)
				}
			}
		}
	}
	if assigned != len(held) || assigned > raceNodes*raceGPUs {
		t.Errorf("GPUs assigned = %d, %d distinct, want each of the %d at most once", assigned, len(held), raceNodes*raceGPUs)
	}
	return held
}

// registerRaceJobs registers raceJobs jobs from raceClients goroutines at
// once and returns each job's GPUs per allocation by job ID.
func registerRaceJobs(t *testing.T, s *Server) map[string]int {
	t.Helper()
	jobs := map[string]int{}
	for i := range raceJobs {
		jobs[fmt.Sprintf("race-%02d", i)] = 1 + i%2
	}
	errs := make([]error, raceClients)
	var wg sync.WaitGroup
	for g := range raceClients {
		wg.Go(func() {
			for i := g; i < raceJobs; i += raceClients {
				id := fmt.Sprintf("race-%02d", i)
				var resp structs.JobRegisterResponse
				req := &structs.JobRegisterRequest{Job: gpuJob(id, structs.JobTypeBatch, 1, jobs[id])}
				if err := s.RPC(structs.RPCJobRegister, req, &resp); err != nil {
					errs[g] = fmt.Errorf("register %s: %w", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return jobs
}

// waitSettled waits until the broker holds no evaluation and every job
// is placed or has a blocked evaluation in state.
func waitSettled(t *testing.T, s *Server, jobs map[string]int) {
	t.Helper()
	waitFor(t, 8*time.Second, func() (bool, string) {
		st := s.broker.Stats()
		if busy := st.TotalReady + st.TotalUnacked + st.TotalJobBlocked + st.TotalWaiting; busy > 0 {
			return false, fmt.Sprintf("broker still busy: %+v", st)
		}
		for id := range jobs {
			if len(liveAllocs(t, s, id)) == 0 && latestEval(t, s, id).Status != structs.EvalStatusBlocked {
				return false, fmt.Sprintf("job %s neither placed nor blocked (latest eval %s)", id, latestEval(t, s, id).Status)
			}
		}
		return true, ""
	})
}

// latestEval returns the job's most recently created evaluation.
func latestEval(t *testing.T, s *Server, jobID string) *structs.Evaluation {
	t.Helper()
	evals, err := s.State().EvalsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evals) == 0 {
		t.Fatalf("job %s has no evaluation", jobID)
	}
	return slices.MaxFunc(evals, func(a, b *structs.Evaluation) int {
		return int(a.CreateIndex) - int(b.CreateIndex)
	})
}

// checkBlockedOnGPUs checks that the job's blocked evaluation says every
// node was exhausted, and only on GPUs.
func checkBlockedOnGPUs(t *testing.T, s *Server, jobID string) {
	t.Helper()
	e := latestEval(t, s, jobID)
	m := e.FailedTGAllocs["train"]
	if m == nil {
		t.Errorf("job %s: blocked eval %s (%s) has no failure metric for train", jobID, e.ID, e.TriggeredBy)
		return
	}
	if m.NodesExhausted != raceNodes || m.NodesFiltered != 0 {
		t.Errorf("job %s: %d nodes exhausted, %d filtered, want %d and 0", jobID, m.NodesExhausted, m.NodesFiltered, raceNodes)
	}
	for reason := range m.DimensionExhausted {
		if !strings.Contains(strings.ToLower(reason), "gpu") {
			t.Errorf("job %s: exhausted on %q, want only GPU reasons", jobID, reason)
		}
	}
}
