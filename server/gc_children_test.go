package server

import (
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestGC_CollectsDeadChildren: a dispatched child and a periodic child
// whose allocations completed are collected like any dead batch job,
// while their parents (running until stopped) stay, so that children
// launched forever do not pile up past the job GC threshold.
func TestGC_CollectsDeadChildren(t *testing.T) {
	t.Parallel()
	s, _ := periodicServer(t, time.Now())
	c := dialRPC(t, s.RPCAddr())
	node := gpuNode("n1", 4)
	registerNode(t, c, node)
	f := &gcFixture{t: t, leader: s, node: node}
	registerJob(t, s, paramJob("render", "optional", nil, nil))
	registerJob(t, s, periodicJob("nightly", "@daily", "UTC", false))
	var d structs.JobDispatchResponse
	call(t, s, structs.RPCJobDispatch, &structs.JobDispatchRequest{JobID: "render"}, &d)
	var p structs.PeriodicForceResponse
	call(t, s, structs.RPCPeriodicForce, &structs.PeriodicForceRequest{JobID: "nightly"}, &p)
	children := periodicChildIDs(t, s, "nightly")
	if len(children) != 1 {
		t.Fatalf("periodic children %v, want one", children)
	}
	for _, id := range []string{d.DispatchedJobID, children[0]} {
		waitFor(t, 10*time.Second, func() (bool, string) { return len(liveAllocs(t, s, id)) > 0, "no allocation of " + id })
		f.report(liveAllocs(t, s, id), structs.AllocClientStatusRunning)
		f.finish(id)
		waitFor(t, 10*time.Second, func() (bool, string) { return storedJob(t, s, id).Status == structs.JobStatusDead, id + " not dead" })
	}
	settle(t, s)
	if _, err := s.collectGarbage(time.Now().Add(DefaultJobGCThreshold+time.Minute), gcThresholds{job: DefaultJobGCThreshold, eval: DefaultEvalGCThreshold, node: DefaultNodeGCThreshold}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{d.DispatchedJobID, children[0]} {
		if allocs, evals, job := gcCounts(t, s, id); job || allocs+evals > 0 {
			t.Errorf("dead child %s after GC: job %v, %d allocs, %d evals; want all collected", id, job, allocs, evals)
		}
	}
	for _, id := range []string{"render", "nightly"} {
		if _, _, job := gcCounts(t, s, id); !job {
			t.Errorf("parent %s collected, want it kept while not stopped", id)
		}
	}
}
