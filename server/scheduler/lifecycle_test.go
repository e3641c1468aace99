package scheduler_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// liveNames returns the sorted names of the job's live allocations.
func liveNames(h *schedtest.Harness, jobID string) []string {
	var names []string
	for _, a := range h.LiveAllocs(ns, jobID) {
		names = append(names, a.Name)
	}
	slices.Sort(names)
	return names
}

// stopped returns the names of the allocations the last plan stopped, in
// plan order.
func stopped(t *testing.T, h *schedtest.Harness) []string {
	t.Helper()
	plans := h.Plans()
	if len(plans) == 0 {
		t.Fatalf("no plan submitted")
	}
	var names []string
	for _, allocs := range plans[len(plans)-1].NodeUpdate {
		for _, a := range allocs {
			names = append(names, a.Name)
		}
	}
	return names
}

func TestScaleDownStopsHighestIndexFirst(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	job := schedtest.ServiceJob("web", 4)
	process(t, h, h.RegisterJob(job))
	if got := liveNames(h, "web"); len(got) != 4 {
		t.Fatalf("live: got %v, want 4", got)
	}

	job.TaskGroups[0].Count = 2
	process(t, h, h.RegisterJob(job))

	if got, want := stopped(t, h), []string{"web.web[3]", "web.web[2]"}; !slices.Equal(got, want) {
		t.Errorf("stopped: got %v, want %v", got, want)
	}
	if got, want := liveNames(h, "web"), []string{"web.web[0]", "web.web[1]"}; !slices.Equal(got, want) {
		t.Errorf("live: got %v, want %v", got, want)
	}
	for _, a := range h.Allocs(ns, "web") {
		if a.DesiredStatus == structs.AllocDesiredStatusStop && a.DesiredDescription != scheduler.DescScaledDown {
			t.Errorf("%s: got description %q, want %q", a.Name, a.DesiredDescription, scheduler.DescScaledDown)
		}
	}
}

func TestScaleUpPlacesLowestFreeIndexes(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	job := schedtest.ServiceJob("web", 3)
	process(t, h, h.RegisterJob(job))
	for _, a := range h.LiveAllocs(ns, "web") {
		if a.Name == "web.web[1]" {
			h.SetClientStatus(a.ID, structs.AllocClientStatusFailed)
		}
	}

	// web[1]'s replacement is a reschedule: it waits out the delay.
	h.Advance(time.Minute)
	job.TaskGroups[0].Count = 4
	process(t, h, h.RegisterJob(job))

	want := []string{"web.web[0]", "web.web[1]", "web.web[2]", "web.web[3]"}
	if got := liveNames(h, "web"); !slices.Equal(got, want) {
		t.Errorf("live: got %v, want %v", got, want)
	}
}

func TestStopJobStopsAllAllocs(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	process(t, h, h.RegisterJob(schedtest.GPUJob("train", 3, 1)))
	if n := len(h.LiveAllocs(ns, "train")); n != 3 {
		t.Fatalf("live: got %d, want 3", n)
	}

	process(t, h, h.StopJob(ns, "train"))

	if live := h.LiveAllocs(ns, "train"); len(live) != 0 {
		t.Fatalf("live after stop: got %d, want none", len(live))
	}
	for _, a := range h.Allocs(ns, "train") {
		if a.DesiredDescription != scheduler.DescJobStopped {
			t.Errorf("%s: got description %q, want %q", a.Name, a.DesiredDescription, scheduler.DescJobStopped)
		}
	}
	if e := lastUpdate(t, h); e.Status != structs.EvalStatusComplete {
		t.Errorf("eval: got %s, want complete", e.Status)
	}
}

func TestPurgedJobStopsAllAllocs(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	job := h.UpsertJob(schedtest.ServiceJob("web", 2))
	process(t, h, h.NewEval(job, structs.EvalTriggerJobRegister))
	if err := h.State.DeleteJob(h.NextIndex(), ns, "web"); err != nil {
		t.Fatalf("delete job: %v", err)
	}

	process(t, h, schedtest.Eval(job, structs.EvalTriggerJobDeregister))

	if live := h.LiveAllocs(ns, "web"); len(live) != 0 {
		t.Fatalf("live after purge: got %d, want none", len(live))
	}
}

func TestLostNodeAllocsReplaced(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 4, "", 80))
	job := h.UpsertJob(schedtest.GPUJob("train", 1, 2))
	process(t, h, h.NewEval(job, structs.EvalTriggerJobRegister))
	old := onlyAlloc(t, h, "train")

	h.SetNodeStatus(old.NodeID, structs.NodeStatusDown)
	process(t, h, h.NewEval(job, structs.EvalTriggerNodeUpdate))

	lost, err := h.State.AllocByID(nil, old.ID)
	if err != nil {
		t.Fatalf("read old alloc: %v", err)
	}
	if lost.DesiredStatus != structs.AllocDesiredStatusStop || lost.ClientStatus != structs.AllocClientStatusLost || lost.DesiredDescription != scheduler.DescNodeLost {
		t.Errorf("old alloc: got %s/%s %q, want stop/lost", lost.DesiredStatus, lost.ClientStatus, lost.DesiredDescription)
	}
	repl := onlyAlloc(t, h, "train")
	if repl.ID == old.ID || repl.Name != old.Name || repl.NodeID == old.NodeID || len(repl.DeviceIDs()) != 2 {
		t.Errorf("replacement: got %s %s on %s with %v, want a new alloc of the same name on the other node", repl.ID, repl.Name, repl.NodeName, repl.DeviceIDs())
	}
}

func TestBatchCompleteNotRerunFailedReplaced(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	job := h.UpsertJob(schedtest.GPUJob("train", 2, 1))
	process(t, h, h.NewEval(job, structs.EvalTriggerJobRegister))
	allocs := h.LiveAllocs(ns, "train")
	if len(allocs) != 2 {
		t.Fatalf("live: got %d, want 2", len(allocs))
	}
	h.SetClientStatus(allocs[0].ID, structs.AllocClientStatusComplete)
	plans := len(h.Plans())

	process(t, h, h.NewEval(job, structs.EvalTriggerRetryFailed))
	if got := len(h.Plans()); got != plans {
		t.Fatalf("plans: got %d, want still %d (a completed batch alloc is done)", got, plans)
	}
	if e := lastUpdate(t, h); e.Status != structs.EvalStatusComplete {
		t.Errorf("eval: got %s, want complete", e.Status)
	}

	h.SetClientStatus(allocs[1].ID, structs.AllocClientStatusFailed)
	h.Advance(scheduler.DefaultReschedulePolicy(structs.JobTypeBatch).Delay)
	process(t, h, h.NewEval(job, structs.EvalTriggerRetryFailed))
	live := h.LiveAllocs(ns, "train")
	if len(live) != 1 || live[0].Name != allocs[1].Name || live[0].ID == allocs[1].ID {
		t.Fatalf("after failure: got %d live, want one new alloc named %s", len(live), allocs[1].Name)
	}
}

func TestServiceFailedAllocReplaced(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	job := h.UpsertJob(schedtest.ServiceJob("web", 1))
	process(t, h, h.NewEval(job, structs.EvalTriggerJobRegister))
	old := onlyAlloc(t, h, "web")
	h.SetClientStatus(old.ID, structs.AllocClientStatusFailed)

	h.Advance(scheduler.DefaultReschedulePolicy(structs.JobTypeService).Delay)
	process(t, h, h.NewEval(job, structs.EvalTriggerRetryFailed))

	repl := onlyAlloc(t, h, "web")
	if repl.ID == old.ID || repl.Name != old.Name {
		t.Errorf("replacement: got %s %s, want a new alloc named %s", repl.ID, repl.Name, old.Name)
	}
}

func TestJobUpdate(t *testing.T) {
	tests := []struct {
		name     string
		change   func(*structs.Job)
		replaced bool
	}{
		{name: "task config changed", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["command"] = "/bin/false" }, replaced: true},
		{name: "gpu count changed", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.Devices[0].Count = 2 }, replaced: true},
		{name: "only count changed", change: func(j *structs.Job) { j.TaskGroups[0].Count = 3 }, replaced: false},
		{name: "job meta changed", change: func(j *structs.Job) { j.Meta = map[string]string{"owner": "ml"} }, replaced: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
			job := schedtest.GPUJob("train", 2, 1)
			process(t, h, h.RegisterJob(job))
			before := h.LiveAllocs(ns, "train")

			changed := job.Copy()
			tt.change(changed)
			process(t, h, h.RegisterJob(changed))

			kept := 0
			for _, a := range before {
				cur, err := h.State.AllocByID(nil, a.ID)
				if err != nil {
					t.Fatalf("read alloc: %v", err)
				}
				if !cur.TerminalStatus() {
					kept++
				} else if cur.DesiredDescription != scheduler.DescUpdated {
					t.Errorf("%s: got description %q, want %q", a.Name, cur.DesiredDescription, scheduler.DescUpdated)
				}
			}
			if got := kept == 0; got != tt.replaced {
				t.Errorf("replaced: got %v (%d of %d kept), want %v", got, kept, len(before), tt.replaced)
			}
			want := changed.TaskGroups[0].Count
			if got := len(h.LiveAllocs(ns, "train")); got != want {
				t.Errorf("live: got %d, want %d", got, want)
			}
		})
	}
}

func TestRemovedGroupStopped(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	job := schedtest.ServiceJob("web", 1)
	extra := job.TaskGroups[0].Copy()
	extra.Name = "sidecar"
	job.TaskGroups = append(job.TaskGroups, extra)
	process(t, h, h.RegisterJob(job))
	if n := len(h.LiveAllocs(ns, "web")); n != 2 {
		t.Fatalf("live: got %d, want 2", n)
	}

	job.TaskGroups = job.TaskGroups[:1]
	process(t, h, h.RegisterJob(job))

	if got, want := liveNames(h, "web"), []string{"web.web[0]"}; !slices.Equal(got, want) {
		t.Errorf("live: got %v, want %v", got, want)
	}
}

func TestPartialCommitRetriesWithFreshState(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 4, "", 80))
	refused := ""
	h.Reject = func(plan *structs.Plan, nodeID string) bool {
		if refused == "" {
			refused = nodeID
			return true
		}
		return false
	}

	if err := h.Process(h.RegisterJob(schedtest.GPUJob("train", 1, 2))); err != nil {
		t.Fatalf("process: %v", err)
	}

	plans, results := h.Plans(), h.Results()
	if n := len(plans); n != 2 {
		t.Fatalf("plans: got %d, want 2 (one refused, one retried)", n)
	}
	// Each attempt offered the evaluation's end with its plan; only the
	// one committed whole wrote it.
	if plans[0].EvalUpdate == nil || results[0].EvalUpdated || !results[1].EvalUpdated {
		t.Errorf("eval with plan: offered %t, written with the refused plan %t, with the retried one %t; want true, false, true",
			plans[0].EvalUpdate != nil, results[0].EvalUpdated, results[1].EvalUpdated)
	}
	if n := len(h.UpdatedEvals()); n != 1 {
		t.Errorf("eval updates: got %d, want 1", n)
	}
	if len(h.LiveAllocs(ns, "train")) != 1 {
		t.Fatalf("live: got %d, want 1", len(h.LiveAllocs(ns, "train")))
	}
	if e := lastUpdate(t, h); e.Status != structs.EvalStatusComplete {
		t.Errorf("eval: got %s, want complete", e.Status)
	}
}

func TestPlanNeverCommittedFailsEval(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	h.Reject = func(*structs.Plan, string) bool { return true }

	if err := h.Process(h.RegisterJob(schedtest.GPUJob("train", 1, 2))); err != nil {
		t.Fatalf("process: %v", err)
	}

	if n := len(h.Plans()); n != 5 {
		t.Errorf("plans: got %d, want 5 attempts", n)
	}
	e := lastUpdate(t, h)
	if e.Status != structs.EvalStatusFailed || e.StatusDescription != "maximum plan attempts reached (5)" {
		t.Errorf("eval: got %s %q, want failed after 5 attempts", e.Status, e.StatusDescription)
	}
	// The job still misses its allocation: a blocked eval retries it when
	// capacity changes.
	created := h.CreatedEvals()
	if len(created) != 1 || created[0].Status != structs.EvalStatusBlocked ||
		created[0].TriggeredBy != structs.EvalTriggerMaxPlans || e.BlockedEval != created[0].ID {
		t.Fatalf("created evals: got %+v, want one blocked %s eval linked from the failed one", created, structs.EvalTriggerMaxPlans)
	}

	// That blocked eval failing the same way goes back to waiting.
	if err := h.Process(h.Eval(created[0].ID)); err != nil {
		t.Fatalf("process blocked: %v", err)
	}
	if got := h.ReblockedEvals(); len(got) != 1 || got[0].ID != created[0].ID || got[0].TriggeredBy != structs.EvalTriggerMaxPlans {
		t.Errorf("reblocked: got %+v, want the blocked one, still by max plan attempts (retried soon)", got)
	}
	if n := len(h.CreatedEvals()); n != 1 {
		t.Errorf("created evals: got %d, want still 1", n)
	}

	// Once the GPUs are gone, it waits for capacity, not for a retry.
	h.Reject = nil
	if err := h.Process(h.RegisterJob(schedtest.GPUJob("other", 1, 4))); err != nil {
		t.Fatalf("process other: %v", err)
	}
	if err := h.Process(h.Eval(created[0].ID)); err != nil {
		t.Fatalf("process blocked again: %v", err)
	}
	got := h.ReblockedEvals()
	if len(got) != 2 || got[1].ID != created[0].ID || got[1].TriggeredBy != structs.EvalTriggerQueuedAllocs {
		t.Errorf("reblocked: got %+v, want the blocked one again, by queued allocs", got)
	}
}

func TestNewRejectsUnknownTypes(t *testing.T) {
	tests := []struct {
		jobType string
		want    error
	}{
		{structs.JobTypeSystem, nil},
		{structs.JobTypeSysBatch, nil},
		{"cron", scheduler.ErrUnknownType},
		{structs.JobTypeService, nil},
		{structs.JobTypeBatch, nil},
	}
	for _, tt := range tests {
		t.Run(tt.jobType, func(t *testing.T) {
			_, err := scheduler.New(tt.jobType, nil, nil, nil)
			if !errors.Is(err, tt.want) {
				t.Errorf("error: got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestFilterReasons(t *testing.T) {
	tests := []struct {
		name   string
		node   func(*structs.Node)
		job    func(*structs.Job)
		reason string
	}{
		{name: "down", node: func(n *structs.Node) { n.Status = structs.NodeStatusDown }, reason: "node not ready"},
		{name: "draining", node: func(n *structs.Node) { n.Drain = true }, reason: "node not ready"},
		{name: "ineligible", node: func(n *structs.Node) { n.SchedulingEligibility = structs.NodeSchedulingIneligible }, reason: "node not ready"},
		{name: "datacenter", node: func(n *structs.Node) { n.Datacenter = "dc2" }, reason: "missing datacenter"},
		{name: "driver unhealthy", node: func(n *structs.Node) { n.Drivers["raw_exec"].Healthy = false }, reason: "driver raw_exec not available"},
		{name: "driver missing", job: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Driver = "docker" }, reason: "driver docker not available"},
		{
			name: "node constraint",
			job: func(j *structs.Job) {
				j.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "windows"}}
			},
			reason: "${attr.kernel.name} = windows",
		},
		{
			name: "task constraint",
			job: func(j *structs.Job) {
				j.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: "is_set"}}
			},
			reason: "${meta.rack} is_set",
		},
		{
			name:   "device model",
			job:    func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.Devices[0].Name = "nvidia/gpu/A100" },
			reason: "device nvidia/gpu/A100 not available",
		},
		{
			name: "device compute capability",
			job: func(j *structs.Job) {
				j.TaskGroups[0].Tasks[0].Resources.Devices[0].Constraints = []*structs.Constraint{{LTarget: "${device.attr.compute_capability}", Operand: ">=", RTarget: "10.0"}}
			},
			reason: "${device.attr.compute_capability} >= 10.0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			node := schedtest.Node("gpu-1", 4, "", 80)
			if tt.node != nil {
				tt.node(node)
			}
			h.UpsertNode(node)
			job := schedtest.GPUJob("train", 1, 1)
			if tt.job != nil {
				tt.job(job)
			}

			process(t, h, h.RegisterJob(job))

			m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]
			if m == nil || m.ConstraintFiltered[tt.reason] != 1 || m.NodesFiltered != 1 {
				t.Errorf("metric: got %+v, want 1 node filtered by %q", m, tt.reason)
			}
		})
	}
}

func TestDistinctHostsSpreadsAcrossNodes(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 8, "", 80))
	job := schedtest.GPUJob("train", 3, 1)
	job.Constraints = []*structs.Constraint{{Operand: structs.ConstraintDistinctHosts, RTarget: "true"}}

	process(t, h, h.RegisterJob(job))

	live := h.LiveAllocs(ns, "train")
	if len(live) != 2 || live[0].NodeID == live[1].NodeID {
		t.Fatalf("live: got %d, want 2 on distinct nodes", len(live))
	}
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]
	if m == nil || m.ConstraintFiltered["distinct_hosts true"] != 2 {
		t.Errorf("metric: got %+v, want both nodes filtered by distinct_hosts", m)
	}
}

func TestCoalescedFailures(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))

	process(t, h, h.RegisterJob(schedtest.GPUJob("train", 5, 1)))

	e := lastUpdate(t, h)
	if n := len(h.LiveAllocs(ns, "train")); n != 4 {
		t.Errorf("live: got %d, want 4", n)
	}
	m := e.FailedTGAllocs[schedtest.GPUGroup]
	if m == nil || m.CoalescedFailures != 0 || e.QueuedAllocations[schedtest.GPUGroup] != 1 {
		t.Errorf("got metric %+v queued %v, want one failure, 1 queued", m, e.QueuedAllocations)
	}

	h2 := schedtest.NewHarness(t)
	h2.UpsertNode(schedtest.Node("gpu-1", 1, "", 80))
	process(t, h2, h2.RegisterJob(schedtest.GPUJob("train", 4, 1)))
	e2 := lastUpdate(t, h2)
	if m := e2.FailedTGAllocs[schedtest.GPUGroup]; m == nil || m.CoalescedFailures != 2 || e2.QueuedAllocations[schedtest.GPUGroup] != 3 {
		t.Errorf("got metric %+v queued %v, want 2 coalesced, 3 queued", m, e2.QueuedAllocations)
	}
}
