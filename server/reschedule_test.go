package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/structs"
)

// TestServer_FailedAllocRescheduled runs the reschedule path end to end:
// the client's failure report creates an eval, the scheduler delays the
// replacement with a follow-up eval that the broker holds for its Wait,
// and a second failure is replaced (service) or left failed (batch).
func TestServer_FailedAllocRescheduled(t *testing.T) {
	t.Parallel()
	const delay = 300 * time.Millisecond
	tests := []struct {
		typ          string
		secondPlaced bool
	}{
		{structs.JobTypeService, true},
		{structs.JobTypeBatch, false},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			policy := scheduler.DefaultReschedulePolicy(tt.typ)
			policy.Delay, policy.MaxDelay = delay, 0
			cfg.schedulerOptions = []scheduler.Option{scheduler.WithReschedulePolicy(tt.typ, policy)}
			s := startServer(t, cfg)
			c := dialRPC(t, s.RPCAddr())
			node := gpuNode("n1", 2)
			registerNode(t, c, node)
			registerJob(t, s, gpuJob("j", tt.typ, 1, 1))
			waitFor(t, 5*time.Second, func() (bool, string) { return len(liveAllocs(t, s, "j")) == 1, "not placed" })

			fail := func() *structs.Allocation {
				t.Helper()
				a := liveAllocs(t, s, "j")[0]
				update := &structs.Allocation{ID: a.ID, NodeID: node.ID, JobID: "j", Namespace: a.Namespace,
					ClientStatus: structs.AllocClientStatusFailed, ClientDescription: "task failed"}
				if err := c.Call(structs.RPCNodeUpdateAlloc, allocUpdate(t, s, []*structs.Allocation{update}), &structs.GenericResponse{}); err != nil {
					t.Fatalf("Node.UpdateAlloc: %v", err)
				}
				return a
			}
			failedAt := time.Now() // the server stamps the failure after this
			first := fail()
			waitFor(t, 5*time.Second, func() (bool, string) {
				live := liveAllocs(t, s, "j")
				return len(live) == 1 && live[0].ID != first.ID, "failed allocation not replaced"
			})
			if waited := time.Since(failedAt); waited < delay {
				t.Errorf("replaced after %s, want at least the %s delay", waited, delay)
			}
			// The follow-up's status lands just after its placement.
			waitFor(t, 5*time.Second, func() (bool, string) {
				evals, err := s.State().EvalsByJob(nil, structs.DefaultNamespace, "j")
				if err != nil {
					t.Fatal(err)
				}
				return slices.ContainsFunc(evals, func(e *structs.Evaluation) bool {
					return e.TriggeredBy == structs.EvalTriggerRetryFailed && e.Wait > 0 && e.Status == structs.EvalStatusComplete
				}), fmt.Sprintf("no completed follow-up eval with a wait among %d evals", len(evals))
			})

			second := fail()
			if tt.secondPlaced {
				waitFor(t, 5*time.Second, func() (bool, string) {
					live := liveAllocs(t, s, "j")
					return len(live) == 1 && live[0].ID != second.ID, "second failure not replaced"
				})
				return
			}
			waitFor(t, 5*time.Second, func() (bool, string) {
				job, _ := s.State().JobByID(nil, "", "j")
				return job.Status == structs.JobStatusDead, "batch job " + job.Status + ", want dead"
			})
			time.Sleep(2 * delay)
			if n := len(liveAllocs(t, s, "j")); n != 0 {
				t.Errorf("live after the second failure: got %d, want 0", n)
			}
		})
	}
}
