package scheduler_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// linuxOnly is the constraint the system test jobs carry; a node with
// another kernel is filtered with it as the reason.
var linuxOnly = &structs.Constraint{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}

// systemJob returns a canonicalized job of typ (system or sysbatch) with
// one group (schedtest.ServiceTask) of one raw_exec task, constrained to
// linux nodes.
func systemJob(id, typ string) *structs.Job {
	job := schedtest.ServiceJob(id, 1)
	job.Type = typ
	job.Constraints = []*structs.Constraint{linuxOnly}
	job.TaskGroups[0].RestartPolicy = nil
	// No update block, as a system job that declares none (the service
	// fixture carries the service default).
	job.Update, job.TaskGroups[0].Update = nil, nil
	job.Canonicalize()
	return job
}

// processSystem runs eval through a SystemScheduler over a fresh snapshot
// and fails the test on an error or a node part the applier refused.
func processSystem(t *testing.T, h *schedtest.Harness, eval *structs.Evaluation) {
	t.Helper()
	snap, err := h.State.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	sched := scheduler.NewSystemScheduler(h.Logger, snap, h, eval.Type == structs.JobTypeSysBatch, scheduler.WithNow(h.Now))
	if err := sched.Process(eval); err != nil {
		t.Fatalf("process: %v", err)
	}
	if r := h.Rejections(); len(r) > 0 {
		t.Fatalf("plan applier refused: %v", r)
	}
}

// liveByNode returns the job's live allocations by node name.
func liveByNode(h *schedtest.Harness, jobID string) map[string]*structs.Allocation {
	out := map[string]*structs.Allocation{}
	for _, a := range h.LiveAllocs(ns, jobID) {
		out[a.NodeName] = a
	}
	return out
}

func sortedNodeNames(m map[string]*structs.Allocation) []string {
	return slices.Sorted(maps.Keys(m))
}

// upsertNodes adds a ready linux node per name.
func upsertNodes(h *schedtest.Harness, names ...string) {
	for _, name := range names {
		h.UpsertNode(schedtest.Node(name, 0, "", 0))
	}
}

// stopsByDesc returns the allocations the last plan stopped, as node
// name -> description (with " (lost)" when stopped as lost).
func stopsByDesc(t *testing.T, h *schedtest.Harness) map[string]string {
	t.Helper()
	plans := h.Plans()
	if len(plans) == 0 {
		t.Fatalf("no plan submitted")
	}
	return stopsSince(h, len(plans)-1)
}

// stopsSince is stopsByDesc over the plans submitted after the first n.
func stopsSince(h *schedtest.Harness, n int) map[string]string {
	out := map[string]string{}
	for _, plan := range h.Plans()[n:] {
		for _, allocs := range plan.NodeUpdate {
			for _, a := range allocs {
				desc := a.DesiredDescription
				if a.ClientStatus == structs.AllocClientStatusLost {
					desc += " (lost)"
				}
				out[a.NodeName] = desc
			}
		}
	}
	return out
}

func TestSystemPlacesOnEveryMatchingNode(t *testing.T) {
	h := schedtest.NewHarness(t)
	upsertNodes(h, "n1", "n2")
	win := schedtest.Node("win", 0, "", 0)
	win.Attributes["kernel.name"] = "windows"
	h.UpsertNode(win)

	processSystem(t, h, h.RegisterJob(systemJob("agent", structs.JobTypeSystem)))

	live := liveByNode(h, "agent")
	if got, want := sortedNodeNames(live), []string{"n1", "n2"}; !slices.Equal(got, want) {
		t.Fatalf("live on: got %v, want %v", got, want)
	}
	for node, a := range live {
		if a.Name != "agent.web[0]" {
			t.Errorf("%s: got name %q, want agent.web[0]", node, a.Name)
		}
		m := a.Metrics
		if m.NodesEvaluated != 3 || m.NodesAvailable[schedtest.Datacenter] != 3 || m.NodesFiltered != 1 || m.ConstraintFiltered[linuxOnly.String()] != 1 {
			t.Errorf("%s metric: got %+v, want 3 evaluated and available, 1 filtered by %q", node, m, linuxOnly)
		}
	}
	e := lastUpdate(t, h)
	if e.Status != structs.EvalStatusComplete || len(e.FailedTGAllocs) != 0 || e.BlockedEval != "" {
		t.Errorf("eval: got %s, failed %v, blocked %q; want complete, a filtered node is no failure", e.Status, e.FailedTGAllocs, e.BlockedEval)
	}
	if n := len(h.CreatedEvals()); n != 0 {
		t.Errorf("created evals: got %d, want 0", n)
	}
}

func TestSystemNewNodeGetsAllocation(t *testing.T) {
	h := schedtest.NewHarness(t)
	upsertNodes(h, "n1", "n2")
	job := h.UpsertJob(systemJob("agent", structs.JobTypeSystem))
	processSystem(t, h, h.NewEval(job, structs.EvalTriggerJobRegister))
	before := liveByNode(h, "agent")

	upsertNodes(h, "n3")
	processSystem(t, h, h.NewEval(job, structs.EvalTriggerNodeUpdate))

	after := liveByNode(h, "agent")
	if got, want := sortedNodeNames(after), []string{"n1", "n2", "n3"}; !slices.Equal(got, want) {
		t.Fatalf("live on: got %v, want %v", got, want)
	}
	for _, node := range []string{"n1", "n2"} {
		if after[node].ID != before[node].ID {
			t.Errorf("%s: allocation replaced, want it kept", node)
		}
	}
	if plan := h.Plans()[len(h.Plans())-1]; len(plan.NodeUpdate) != 0 {
		t.Errorf("last plan stops: got %v, want none", plan.NodeUpdate)
	}
}

func TestSystemNodeDownLostNotReplacedElsewhere(t *testing.T) {
	h := schedtest.NewHarness(t)
	upsertNodes(h, "n1", "n2")
	job := h.UpsertJob(systemJob("agent", structs.JobTypeSystem))
	processSystem(t, h, h.NewEval(job, structs.EvalTriggerJobRegister))
	before := liveByNode(h, "agent")

	h.SetNodeStatus(schedtest.NodeID("n1"), structs.NodeStatusDown)
	processSystem(t, h, h.NewEval(job, structs.EvalTriggerNodeUpdate))

	if got, want := stopsByDesc(t, h), map[string]string{"n1": scheduler.DescNodeLost + " (lost)"}; !maps.Equal(got, want) {
		t.Errorf("stops: got %v, want %v", got, want)
	}
	live := liveByNode(h, "agent")
	if got := sortedNodeNames(live); !slices.Equal(got, []string{"n2"}) || live["n2"].ID != before["n2"].ID {
		t.Fatalf("live on: got %v, want only the original on n2", got)
	}
	if e := lastUpdate(t, h); len(e.FailedTGAllocs) != 0 || e.BlockedEval != "" {
		t.Errorf("eval: got failed %v blocked %q, want none for a down node", e.FailedTGAllocs, e.BlockedEval)
	}

	h.SetNodeStatus(schedtest.NodeID("n1"), structs.NodeStatusReady)
	processSystem(t, h, h.NewEval(job, structs.EvalTriggerNodeUpdate))
	if got := sortedNodeNames(liveByNode(h, "agent")); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("live on after n1 returned: got %v, want [n1 n2]", got)
	}
}

func TestSystemNodeNotReady(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(n *structs.Node)
		wantLive []string
		wantStop map[string]string
	}{
		{
			name:     "draining stops",
			mutate:   func(n *structs.Node) { n.Drain = true },
			wantLive: []string{"n2"},
			wantStop: map[string]string{"n1": scheduler.DescNodeDrained},
		},
		{
			name:     "ineligible keeps",
			mutate:   func(n *structs.Node) { n.SchedulingEligibility = structs.NodeSchedulingIneligible },
			wantLive: []string{"n1", "n2"},
		},
		{
			name:     "no longer matching stops",
			mutate:   func(n *structs.Node) { n.Attributes["kernel.name"] = "windows" },
			wantLive: []string{"n2"},
			wantStop: map[string]string{"n1": scheduler.DescNodeMismatched},
		},
		{
			name:     "driver unhealthy stops",
			mutate:   func(n *structs.Node) { n.Drivers["raw_exec"].Healthy = false },
			wantLive: []string{"n2"},
			wantStop: map[string]string{"n1": scheduler.DescNodeMismatched},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			upsertNodes(h, "n1", "n2")
			job := h.UpsertJob(systemJob("agent", structs.JobTypeSystem))
			processSystem(t, h, h.NewEval(job, structs.EvalTriggerJobRegister))
			plans := len(h.Plans())

			n1 := schedtest.Node("n1", 0, "", 0)
			tt.mutate(n1)
			h.UpsertNode(n1)
			processSystem(t, h, h.NewEval(job, structs.EvalTriggerNodeUpdate))

			if got := sortedNodeNames(liveByNode(h, "agent")); !slices.Equal(got, tt.wantLive) {
				t.Errorf("live on: got %v, want %v", got, tt.wantLive)
			}
			if got := stopsSince(h, plans); !maps.Equal(got, tt.wantStop) {
				t.Errorf("stops: got %v, want %v", got, tt.wantStop)
			}
		})
	}
}

func TestSystemJobUpdate(t *testing.T) {
	h := schedtest.NewHarness(t)
	upsertNodes(h, "n1", "n2")
	job := systemJob("agent", structs.JobTypeSystem)
	processSystem(t, h, h.RegisterJob(job))
	before := liveByNode(h, "agent")

	// A change outside the group moves the allocations to the new
	// version in place.
	job.Priority = 70
	processSystem(t, h, h.RegisterJob(job))
	inPlace := h.Job(ns, "agent").JobModifyIndex
	for node, a := range liveByNode(h, "agent") {
		if a.ID != before[node].ID || a.Job.JobModifyIndex != inPlace {
			t.Errorf("%s: got alloc of job version %d (replaced %v), want the same one on %d",
				node, a.Job.JobModifyIndex, a.ID != before[node].ID, inPlace)
		}
	}
	if got := stopsByDesc(t, h); len(got) != 0 {
		t.Errorf("stops after a job-level change: got %v, want none", got)
	}

	job.TaskGroups[0].Tasks[0].Config["args"] = []any{"7200"}
	processSystem(t, h, h.RegisterJob(job))

	want := map[string]string{"n1": scheduler.DescUpdated, "n2": scheduler.DescUpdated}
	if got := stopsByDesc(t, h); !maps.Equal(got, want) {
		t.Errorf("stops: got %v, want %v", got, want)
	}
	after := liveByNode(h, "agent")
	if got := sortedNodeNames(after); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("live on: got %v, want [n1 n2]", got)
	}
	stored := h.Job(ns, "agent")
	for node, a := range after {
		if a.ID == before[node].ID || a.Job.JobModifyIndex != stored.JobModifyIndex {
			t.Errorf("%s: got alloc of job version %d (replaced %v), want a new one of %d",
				node, a.Job.JobModifyIndex, a.ID != before[node].ID, stored.JobModifyIndex)
		}
	}
}

func TestSystemStopJob(t *testing.T) {
	h := schedtest.NewHarness(t)
	upsertNodes(h, "n1", "n2")
	processSystem(t, h, h.RegisterJob(systemJob("agent", structs.JobTypeSystem)))

	processSystem(t, h, h.StopJob(ns, "agent"))

	if live := h.LiveAllocs(ns, "agent"); len(live) != 0 {
		t.Fatalf("live after stop: got %d, want none", len(live))
	}
	want := map[string]string{"n1": scheduler.DescJobStopped, "n2": scheduler.DescJobStopped}
	if got := stopsByDesc(t, h); !maps.Equal(got, want) {
		t.Errorf("stops: got %v, want %v", got, want)
	}
}

func TestSystemNodeWithoutRoomFails(t *testing.T) {
	h := schedtest.NewHarness(t)
	upsertNodes(h, "n1")
	for _, name := range []string{"small-1", "small-2"} {
		n := schedtest.Node(name, 0, "", 0)
		n.NodeResources.Memory.MemoryMB = schedtest.TaskMemMB / 2
		h.UpsertNode(n)
	}

	processSystem(t, h, h.RegisterJob(systemJob("agent", structs.JobTypeSystem)))

	if got := sortedNodeNames(liveByNode(h, "agent")); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("live on: got %v, want [n1]", got)
	}
	e := lastUpdate(t, h)
	m := e.FailedTGAllocs[schedtest.ServiceTask]
	if m == nil || m.NodesEvaluated != 3 || m.NodesExhausted != 2 || m.DimensionExhausted["memory"] != 2 || m.CoalescedFailures != 1 {
		t.Fatalf("failed metric: got %+v, want 3 evaluated, 2 exhausted on memory, 1 coalesced", m)
	}
	if q := e.QueuedAllocations[schedtest.ServiceTask]; q != 2 {
		t.Errorf("queued: got %d, want 2", q)
	}
	created := h.CreatedEvals()
	if len(created) != 1 || created[0].Status != structs.EvalStatusBlocked || e.BlockedEval != created[0].ID {
		t.Fatalf("created evals: got %d (eval links %q), want one blocked eval linked", len(created), e.BlockedEval)
	}
	if bm := created[0].FailedTGAllocs[schedtest.ServiceTask]; bm == nil || bm.NodesExhausted != 2 {
		t.Errorf("blocked eval metric: got %+v, want 2 exhausted", bm)
	}

	// Room frees up on one small node: the blocked eval places there and
	// goes back to waiting for the other.
	grown := schedtest.Node("small-1", 0, "", 0)
	h.UpsertNode(grown)
	processSystem(t, h, created[0])
	if got := sortedNodeNames(liveByNode(h, "agent")); !slices.Equal(got, []string{"n1", "small-1"}) {
		t.Errorf("live on: got %v, want [n1 small-1]", got)
	}
	if r := h.ReblockedEvals(); len(r) != 1 || r[0].FailedTGAllocs[schedtest.ServiceTask].NodesExhausted != 1 {
		t.Errorf("reblocked: got %d evals, want the blocked one with 1 exhausted node", len(r))
	}
}

func TestSysBatchCompletedNotRerunFailedRescheduledOnSameNode(t *testing.T) {
	h := schedtest.NewHarness(t)
	upsertNodes(h, "n1", "n2")
	job := h.UpsertJob(systemJob("sweep", structs.JobTypeSysBatch))
	processSystem(t, h, h.NewEval(job, structs.EvalTriggerJobRegister))
	first := liveByNode(h, "sweep")
	h.SetClientStatus(first["n1"].ID, structs.AllocClientStatusComplete)
	h.SetClientStatus(first["n2"].ID, structs.AllocClientStatusFailed)

	// Batch's default policy: one reschedule within 24h, 5s after.
	processSystem(t, h, h.NewEval(job, structs.EvalTriggerRetryFailed))
	if live := h.LiveAllocs(ns, "sweep"); len(live) != 0 {
		t.Fatalf("live before the delay: got %d, want 0", len(live))
	}
	e := lastUpdate(t, h)
	if e.NextEval == "" || h.Eval(e.NextEval).Wait != 5*time.Second {
		t.Fatalf("follow-up: got %q, want one waiting 5s", e.NextEval)
	}

	h.Advance(5 * time.Second)
	processSystem(t, h, h.Eval(e.NextEval))
	live := liveByNode(h, "sweep")
	if got := sortedNodeNames(live); !slices.Equal(got, []string{"n2"}) || live["n2"].ID == first["n2"].ID {
		t.Fatalf("live on: got %v, want a replacement on n2 only", got)
	}

	h.SetClientStatus(live["n2"].ID, structs.AllocClientStatusFailed)
	h.Advance(time.Minute)
	processSystem(t, h, h.NewEval(job, structs.EvalTriggerRetryFailed))
	if live := h.LiveAllocs(ns, "sweep"); len(live) != 0 {
		t.Errorf("live after the second failure: got %d, want 0 (attempts used up)", len(live))
	}
	if want := "not rescheduled, attempts used up: sweep.web[0] on node n2"; lastUpdate(t, h).StatusDescription != want {
		t.Errorf("description: got %q, want %q", lastUpdate(t, h).StatusDescription, want)
	}
}

func TestSysBatchUpdateRerunsCompleted(t *testing.T) {
	h := schedtest.NewHarness(t)
	upsertNodes(h, "n1")
	job := systemJob("sweep", structs.JobTypeSysBatch)
	processSystem(t, h, h.RegisterJob(job))
	h.SetClientStatus(liveByNode(h, "sweep")["n1"].ID, structs.AllocClientStatusComplete)

	processSystem(t, h, h.RegisterJob(job))
	if n := len(h.LiveAllocs(ns, "sweep")); n != 0 {
		t.Fatalf("live after an unchanged register: got %d, want 0", n)
	}

	job.TaskGroups[0].Tasks[0].Config["args"] = []any{"1"}
	processSystem(t, h, h.RegisterJob(job))
	if got := sortedNodeNames(liveByNode(h, "sweep")); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("live on after a group change: got %v, want [n1]", got)
	}
}

// TestSystemJobRollingUpdate: a system job with update { max_parallel = 1
// min_healthy_time = 10s } replaces one node at a time, the next once the
// replacement has run for 10s.
func TestSystemJobRollingUpdate(t *testing.T) {
	h := schedtest.NewHarness(t)
	upsertNodes(h, "n1", "n2")
	job := systemJob("agent", structs.JobTypeSystem)
	job.Update = &structs.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second}
	job.Canonicalize()
	processSystem(t, h, h.RegisterJob(job))
	job.TaskGroups[0].Tasks[0].Config["args"] = []any{"7200"}
	processSystem(t, h, h.RegisterJob(job))
	if got := stopsByDesc(t, h); len(got) != 1 {
		t.Fatalf("first pass stopped %v, want one node (max_parallel 1)", got)
	}
	stored := h.Job(ns, "agent")
	var repl *structs.Allocation
	for _, a := range liveByNode(h, "agent") {
		if a.Job.JobModifyIndex == stored.JobModifyIndex {
			repl = a
		}
	}
	if repl == nil {
		t.Fatalf("no replacement on the new version")
	}
	running := &structs.Allocation{ID: repl.ID, ClientStatus: structs.AllocClientStatusRunning,
		TaskStates: map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: h.Now()}}}
	if err := h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{running}); err != nil {
		t.Fatal(err)
	}
	processSystem(t, h, h.NewEval(stored, structs.EvalTriggerRollingUpdate))
	if got := stopsByDesc(t, h); len(got) != 1 {
		t.Fatalf("before min_healthy_time: stopped %v, want still one node", got)
	}
	h.Advance(11 * time.Second)
	processSystem(t, h, h.NewEval(stored, structs.EvalTriggerRollingUpdate))
	for node, a := range liveByNode(h, "agent") {
		if a.Job.JobModifyIndex != stored.JobModifyIndex {
			t.Errorf("%s still on the old version after the first replacement was healthy", node)
		}
	}
}
