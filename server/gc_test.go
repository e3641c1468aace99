package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// gcFixture is a cluster with one node and four jobs, all reported
// running by their client first: a batch job whose allocations
// completed, a service job that was stopped and one that was purged
// (their allocations then completed on the client), and a service job
// that still runs.
type gcFixture struct {
	t      *testing.T
	leader *Server
	node   *structs.Node
}

func newGCFixture(t *testing.T, leader *Server) *gcFixture {
	t.Helper()
	f := &gcFixture{t: t, leader: leader, node: gpuNode("gc-node", 8)}
	registerNode(t, dialRPC(t, leader.RPCAddr()), f.node)
	for _, job := range []*structs.Job{
		gpuJob("batch", structs.JobTypeBatch, 2, 0),
		gpuJob("stopped", structs.JobTypeService, 1, 0),
		gpuJob("purged", structs.JobTypeService, 1, 0),
		gpuJob("live", structs.JobTypeService, 1, 0),
	} {
		registerJob(t, leader, job)
	}
	for id, n := range map[string]int{"batch": 2, "stopped": 1, "purged": 1, "live": 1} {
		waitFor(t, 10*time.Second, func() (bool, string) {
			got := len(liveAllocs(t, leader, id))
			return got == n, fmt.Sprintf("job %s has %d live allocs, want %d", id, got, n)
		})
	}
	for _, id := range []string{"batch", "stopped", "purged", "live"} {
		f.report(liveAllocs(t, leader, id), structs.AllocClientStatusRunning)
	}
	f.finish("batch")
	for id, purge := range map[string]bool{"stopped": false, "purged": true} {
		allocs := liveAllocs(t, leader, id)
		call(t, leader, structs.RPCJobDeregister, &structs.JobDeregisterRequest{JobID: id, Purge: purge}, &structs.JobDeregisterResponse{})
		waitFor(t, 10*time.Second, func() (bool, string) {
			return len(liveAllocs(t, leader, id)) == 0, "deregistered job " + id + " still has live allocs"
		})
		f.complete(allocs)
	}
	settle(t, leader)
	return f
}

// finish reports the job's live allocations complete.
func (f *gcFixture) finish(jobID string) {
	f.complete(liveAllocs(f.t, f.leader, jobID))
}

// complete reports allocs complete, as their client does.
func (f *gcFixture) complete(allocs []*structs.Allocation) {
	f.report(allocs, structs.AllocClientStatusComplete)
}

// report reports allocs in status, as their client does.
func (f *gcFixture) report(allocs []*structs.Allocation, status string) {
	f.t.Helper()
	var updates []*structs.Allocation
	for _, a := range allocs {
		u := a.Copy()
		u.ClientStatus = status
		updates = append(updates, u)
	}
	call(f.t, f.leader, structs.RPCNodeUpdateAlloc, allocUpdate(f.t, f.leader, updates), &structs.GenericResponse{})
}

// counts returns how many allocations and evaluations each job has in
// s's state, and whether the job is there.
func gcCounts(t *testing.T, s *Server, jobID string) (allocs, evals int, job bool) {
	t.Helper()
	st := s.State()
	a, err := st.AllocsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	e, err := st.EvalsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	j, err := st.JobByID(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	return len(a), len(e), j != nil
}

// TestGC_ThresholdsThroughRaft: nothing younger than the thresholds is
// collected; past them, the stopped and dead batch jobs go with their
// allocations and evaluations, the purged job's allocations and
// evaluations go, and the running job keeps everything, on the leader
// and on a follower.
func TestGC_ThresholdsThroughRaft(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	leader := c.Leader()
	newGCFixture(t, leader)
	th := gcThresholds{job: DefaultJobGCThreshold, eval: DefaultEvalGCThreshold, node: DefaultNodeGCThreshold}

	n, err := leader.collectGarbage(time.Now(), th)
	if err != nil || n != 0 {
		t.Fatalf("collectGarbage now = %d, %v; want nothing collected", n, err)
	}
	n, err = leader.collectGarbage(time.Now().Add(DefaultJobGCThreshold+time.Minute), th)
	if err != nil || n == 0 {
		t.Fatalf("collectGarbage past the thresholds = %d, %v; want some collected", n, err)
	}
	index, _ := leader.State().LatestIndex()
	for _, s := range c.servers {
		waitFor(t, 10*time.Second, func() (bool, string) {
			got, _ := s.State().LatestIndex()
			return got >= index, "server behind the leader"
		})
		for _, id := range []string{"batch", "stopped", "purged"} {
			if a, e, j := gcCounts(t, s, id); a != 0 || e != 0 || j {
				t.Errorf("%s: job %s has %d allocs, %d evals, job kept %v; want all collected", s.config.NodeName, id, a, e, j)
			}
		}
		if a, e, j := gcCounts(t, s, "live"); a != 1 || e == 0 || !j {
			t.Errorf("%s: live job has %d allocs, %d evals, job kept %v; want 1 alloc, its evals and the job", s.config.NodeName, a, e, j)
		}
	}
}

// TestGC_PeriodicWithLowThresholds: with short thresholds and interval,
// the leader's own loop collects the finished jobs' objects.
func TestGC_PeriodicWithLowThresholds(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.GCInterval = 50 * time.Millisecond
	cfg.JobGCThreshold, cfg.EvalGCThreshold, cfg.NodeGCThreshold = time.Millisecond, time.Millisecond, time.Millisecond
	s := startServer(t, cfg)
	newGCFixture(t, s)
	waitFor(t, 10*time.Second, func() (bool, string) {
		for _, id := range []string{"batch", "stopped", "purged"} {
			if a, e, j := gcCounts(t, s, id); a != 0 || e != 0 || j {
				return false, fmt.Sprintf("job %s has %d allocs, %d evals, job kept %v", id, a, e, j)
			}
		}
		return true, ""
	})
	if a, _, j := gcCounts(t, s, "live"); a != 1 || !j {
		t.Fatalf("live job has %d allocs, job kept %v; want 1 and kept", a, j)
	}
}

// TestGC_ForceNeedsManagement: System.GarbageCollect is refused without a
// management token and, with one, collects finished objects whatever
// their age.
func TestGC_ForceNeedsManagement(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	tok := clientToken(t, s, mgmt, "writer", `namespace "default" { policy = "write" }`)
	for _, secret := range []string{"", tok.SecretID} {
		req := &structs.SystemGCRequest{}
		req.AuthToken = secret
		if err := s.RPC(structs.RPCSystemGarbageCollect, req, &structs.GenericResponse{}); !isDenied(err) {
			t.Errorf("GarbageCollect with token %q: %v, want permission denied", secret, err)
		}
	}
	e := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: structs.DefaultNamespace, JobID: "gone",
		Type: structs.JobTypeService, Status: structs.EvalStatusComplete, ModifyTime: time.Now().UnixNano()}
	if err := s.upsertEvals(e); err != nil {
		t.Fatal(err)
	}
	req := &structs.SystemGCRequest{}
	req.AuthToken = mgmt
	call(t, s, structs.RPCSystemGarbageCollect, req, &structs.GenericResponse{})
	if got := evalByID(t, s, e.ID); got != nil {
		t.Fatalf("eval of a purged job after a forced GC = %+v, want collected", got)
	}
}

// TestGC_SplitBatches: units are packed into entries of at most the
// batch size and never cut: a job goes with its allocations and
// evaluations, even past the size.
func TestGC_SplitBatches(t *testing.T) {
	unit := func(job string, allocs int) *structs.GarbageCollectRequest {
		u := &structs.GarbageCollectRequest{Jobs: []structs.GCJob{{ID: job}}}
		for i := range allocs {
			u.Allocs = append(u.Allocs, fmt.Sprint(job, "-a", i))
		}
		return u
	}
	got := splitGC([]*structs.GarbageCollectRequest{unit("a", 600), unit("b", 600), unit("big", 2500), unit("c", 10)}, 1000)
	var sizes []int
	for _, b := range got {
		sizes = append(sizes, b.Len())
	}
	if !slices.Equal(sizes, []int{601, 601, 2501, 11}) {
		t.Fatalf("batch sizes = %v, want [601 601 2501 11]: whole units, packed up to 1000", sizes)
	}
	if len(splitGC(nil, 1000)) != 0 {
		t.Fatal("an empty collection made an entry")
	}
}

// TestGC_KeepsTheAllocationsAJobsStatusRestsOn: a dead batch job under
// the job threshold keeps its last allocation (without it the job would
// be pending again).
func TestGC_KeepsTheAllocationsAJobsStatusRestsOn(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 1))
	registerJob(t, s, gpuJob("once", structs.JobTypeBatch, 1, 0))
	waitFor(t, 5*time.Second, func() (bool, string) { return len(liveAllocs(t, s, "once")) == 1, "not placed" })
	done := liveAllocs(t, s, "once")[0].Copy()
	done.ClientStatus = structs.AllocClientStatusComplete
	if err := c.Call(structs.RPCNodeUpdateAlloc, allocUpdate(t, s, []*structs.Allocation{done}), &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		job, _ := s.State().JobByID(nil, structs.DefaultNamespace, "once")
		return job != nil && job.Status == structs.JobStatusDead, "batch job not dead"
	})
	// Past the allocation and evaluation thresholds, not the job's.
	if _, err := s.collectGarbage(time.Now().Add(2*time.Hour), gcThresholds{job: 4 * time.Hour, eval: time.Hour, node: time.Hour}); err != nil {
		t.Fatal(err)
	}
	allocs, _, present := gcCounts(t, s, "once")
	job, _ := s.State().JobByID(nil, structs.DefaultNamespace, "once")
	if !present || allocs != 1 || job.Status != structs.JobStatusDead {
		t.Errorf("after collecting allocations: %d allocations (want 1), job present %v, status %q (want dead)", allocs, present, job.Status)
	}
	// Past the job's threshold: the job goes with its allocation, in one
	// entry.
	if _, err := s.collectGarbage(time.Now().Add(5*time.Hour), gcThresholds{job: 4 * time.Hour, eval: time.Hour, node: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if allocs, evals, present := gcCounts(t, s, "once"); present || allocs != 0 || evals != 0 {
		t.Errorf("past the job threshold: job present %v, %d allocations, %d evaluations; want all gone", present, allocs, evals)
	}
}

// TestGC_Slots: an allocation replaces an older one of its name; of a
// system or sysbatch job (one allocation per node, all of one name) only
// one of its node.
func TestGC_Slots(t *testing.T) {
	a := &structs.Allocation{Name: "j.g[0]", NodeID: "n1"}
	b := &structs.Allocation{Name: "j.g[0]", NodeID: "n2"}
	for _, tt := range []struct {
		typ  string
		same bool
	}{
		{structs.JobTypeBatch, true}, {structs.JobTypeService, true},
		{structs.JobTypeSystem, false}, {structs.JobTypeSysBatch, false},
	} {
		j := &jobGC{job: &structs.Job{Type: tt.typ}}
		if got := j.slot(a) == j.slot(b); got != tt.same {
			t.Errorf("%s: allocations of one name on two nodes share a slot: %v, want %v", tt.typ, got, tt.same)
		}
	}
}
