package scheduler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// gangJob is a batch job of count single-GPU allocations that must all be
// placed together.
func gangJob(id string, count int) *structs.Job {
	job := schedtest.GPUJob(id, count, 1)
	job.TaskGroups[0].Gang = &structs.Gang{Min: count}
	job.Canonicalize()
	return job
}

// fillGPUs places a plain job holding n single GPUs and returns it.
func fillGPUs(t *testing.T, h *schedtest.Harness, id string, n int) *structs.Job {
	t.Helper()
	job := schedtest.GPUJob(id, n, 1)
	process(t, h, h.RegisterJob(job))
	if got := len(h.LiveAllocs(ns, id)); got != n {
		t.Fatalf("filler %s: got %d live allocs, want %d", id, got, n)
	}
	return job
}

func TestGangAllOrNothing(t *testing.T) {
	// Two nodes of 2 GPUs; one GPU is held: 3 free, the gang needs 4.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 2, "", 80))
	fillGPUs(t, h, "filler", 1)

	process(t, h, h.RegisterJob(gangJob("ddp", 4)))
	if live := h.LiveAllocs(ns, "ddp"); len(live) != 0 {
		t.Fatalf("gang placed %d of 4 with 3 GPUs free, want none", len(live))
	}
	e := lastUpdate(t, h)
	m := e.FailedTGAllocs[schedtest.GPUGroup]
	if m == nil || !strings.Contains(m.Gang, fmt.Sprintf(`gang %q: group %q would have 3 of the 4`, schedtest.GPUGroup, schedtest.GPUGroup)) {
		t.Fatalf("failed metric: got %+v, want the gang's reason", m)
	}
	if e.QueuedAllocations[schedtest.GPUGroup] != 4 || e.BlockedEval == "" {
		t.Errorf("eval: queued %d blocked %q, want 4 queued and a blocked eval", e.QueuedAllocations[schedtest.GPUGroup], e.BlockedEval)
	}

	// The filler ends: the fourth GPU frees and the blocked eval places
	// all four in one plan, at one index.
	h.SetClientStatus(onlyAlloc(t, h, "filler").ID, structs.AllocClientStatusComplete)
	plans := len(h.Plans())
	process(t, h, h.Eval(e.BlockedEval))
	live := h.LiveAllocs(ns, "ddp")
	if len(live) != 4 {
		t.Fatalf("after a GPU freed: got %d live, want 4", len(live))
	}
	if got := len(h.Plans()) - plans; got != 1 {
		t.Errorf("plans submitted: got %d, want 1", got)
	}
	if !h.Plans()[len(h.Plans())-1].AllAtOnce {
		t.Errorf("the gang's plan is not AllAtOnce")
	}
	for _, a := range live[1:] {
		if a.CreateIndex != live[0].CreateIndex || a.EvalID != live[0].EvalID {
			t.Errorf("alloc %s: index %d eval %s, want %d %s like the others", a.ID, a.CreateIndex, a.EvalID, live[0].CreateIndex, live[0].EvalID)
		}
	}
}

func TestGangOfTwoGroups(t *testing.T) {
	// Workers (3 GPUs) and a parameter server (1 GPU) share a gang; 3 GPUs
	// are free: the workers alone would fit, but nothing is placed.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	fillGPUs(t, h, "filler", 1)
	job := schedtest.GPUJob("ddp", 3, 1)
	ps := job.TaskGroups[0].Copy()
	ps.Name, ps.Count = "ps", 1
	job.TaskGroups = append(job.TaskGroups, ps)
	job.TaskGroups[0].Gang = &structs.Gang{Name: "ddp", Min: 3}
	job.TaskGroups[1].Gang = &structs.Gang{Name: "ddp", Min: 1}
	job.Canonicalize()

	process(t, h, h.RegisterJob(job))
	if live := h.LiveAllocs(ns, "ddp"); len(live) != 0 {
		t.Fatalf("gang of two groups placed %d, want none", len(live))
	}
	e := lastUpdate(t, h)
	for _, g := range []string{schedtest.GPUGroup, "ps"} {
		if m := e.FailedTGAllocs[g]; m == nil || !strings.Contains(m.Gang, `gang "ddp"`) {
			t.Errorf("group %s: failed metric %+v, want the gang's reason", g, m)
		}
	}
	if e.QueuedAllocations[schedtest.GPUGroup] != 3 || e.QueuedAllocations["ps"] != 1 {
		t.Errorf("queued: got %v, want 3 workers and 1 ps", e.QueuedAllocations)
	}
}

func TestGangMinBelowCount(t *testing.T) {
	// min 2 of count 4 with 3 GPUs free: 3 are placed, the fourth waits.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	fillGPUs(t, h, "filler", 1)
	job := schedtest.GPUJob("elastic", 4, 1)
	job.TaskGroups[0].Gang = &structs.Gang{Min: 2}
	job.Canonicalize()
	process(t, h, h.RegisterJob(job))
	if live := h.LiveAllocs(ns, "elastic"); len(live) != 3 {
		t.Fatalf("got %d live, want 3 (min 2 reached)", len(live))
	}
	if m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]; m == nil || m.Gang != "" {
		t.Errorf("failed metric: got %+v, want a plain failure for the fourth", m)
	}
}

func TestGangReplacesOneMember(t *testing.T) {
	// A running gang of 3 loses one member: its replacement alone is
	// placed (the two live members count towards min).
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	process(t, h, h.RegisterJob(gangJob("ddp", 3)))
	live := h.LiveAllocs(ns, "ddp")
	if len(live) != 3 {
		t.Fatalf("got %d live, want 3", len(live))
	}
	h.SetClientStatus(live[0].ID, structs.AllocClientStatusFailed)
	h.Advance(structs.DefaultReschedulePolicy(structs.JobTypeBatch).Delay * 2)
	process(t, h, h.NewEval(h.Job(ns, "ddp"), structs.EvalTriggerRetryFailed))
	if got := len(h.LiveAllocs(ns, "ddp")); got != 3 {
		t.Errorf("after one member failed: got %d live, want 3 (its replacement placed)", got)
	}
}

func TestGangPlanCommitsWholeOrNothing(t *testing.T) {
	// The applier refuses one node of the gang's plan: nothing of it
	// commits, and the retry with fresh state places the whole gang.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 2, "", 80))
	refusals := 0
	h.Reject = func(plan *structs.Plan, nodeID string) bool {
		if refusals == 0 && nodeID == schedtest.NodeID("gpu-2") {
			refusals++
			return true
		}
		return false
	}
	if err := h.Process(h.RegisterJob(gangJob("ddp", 4))); err != nil {
		t.Fatalf("process: %v", err)
	}
	results := h.Results()
	if len(results) != 2 {
		t.Fatalf("plans: got %d, want 2 (refused, then retried)", len(results))
	}
	if n := len(results[0].NodeAllocation); n != 0 {
		t.Errorf("first plan committed %d nodes, want none of an all-at-once plan", n)
	}
	if got := len(h.LiveAllocs(ns, "ddp")); got != 4 {
		t.Errorf("after the retry: got %d live, want 4", got)
	}
}

func TestGangReservationStopsStarvation(t *testing.T) {
	// Two nodes of 2 GPUs, 3 held by a filler: a gang of 4 waits and
	// reserves both nodes; a stream of small jobs of the same priority
	// does not take the GPUs that free up; when the filler is gone the
	// gang is placed and its reservation released.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 2, "", 80))
	filler := fillGPUs(t, h, "filler", 3)

	process(t, h, h.RegisterJob(gangJob("ddp", 4)))
	gangEval := lastUpdate(t, h)
	res, err := h.State.ReservationByJob(ns, "ddp")
	if err != nil || res == nil || len(res.Nodes) != 2 || res.GPUs != 4 {
		t.Fatalf("reservation = %+v (err %v), want both nodes held for 4 GPUs", res, err)
	}
	if m := gangEval.FailedTGAllocs[schedtest.GPUGroup]; m == nil || !strings.Contains(m.Gang, "holding 2 node(s) for 4 GPUs") {
		t.Errorf("gang metric = %+v, want it to say what it holds", m)
	}

	// A small job of the same priority: one GPU is free, but held.
	process(t, h, h.RegisterJob(schedtest.GPUJob("small-1", 1, 1)))
	if n := len(h.LiveAllocs(ns, "small-1")); n != 0 {
		t.Fatalf("small job placed %d on GPUs held for the gang, want 0", n)
	}
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]
	if m == nil || m.DimensionExhausted[`devices: nvidia/gpu: free GPUs held for waiting gang "ddp"`] == 0 {
		t.Errorf("small job metric = %+v, want the reservation named", m)
	}
	// A higher-priority job may use them.
	urgent := schedtest.GPUJob("urgent", 1, 1)
	urgent.Priority = filler.Priority + 20
	process(t, h, h.RegisterJob(urgent))
	if n := len(h.LiveAllocs(ns, "urgent")); n != 1 {
		t.Errorf("higher-priority job placed %d, want 1 (reservations hold only against equal or lower)", n)
	}

	// The filler and the urgent job end: the gang's blocked eval places
	// all four and releases the reservation.
	for _, a := range append(h.LiveAllocs(ns, "filler"), h.LiveAllocs(ns, "urgent")...) {
		h.SetClientStatus(a.ID, structs.AllocClientStatusComplete)
	}
	process(t, h, h.Eval(gangEval.BlockedEval))
	if n := len(h.LiveAllocs(ns, "ddp")); n != 4 {
		t.Fatalf("gang placed %d after the filler ended, want 4", n)
	}
	if res, _ := h.State.ReservationByJob(ns, "ddp"); res != nil {
		t.Errorf("reservation still stored after the gang was placed: %+v", res)
	}
}

func TestGangReservationExpires(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	fillGPUs(t, h, "filler", 1)
	job := gangJob("ddp", 2)
	job.TaskGroups[0].Gang.Timeout = time.Minute
	process(t, h, h.RegisterJob(job))
	if res, _ := h.State.ReservationByJob(ns, "ddp"); res == nil {
		t.Fatalf("no reservation for the waiting gang")
	}

	first, _ := h.State.ReservationByJob(ns, "ddp")

	// Past the timeout the reservation holds nothing: the gang's next
	// evaluation says so and does not reserve again, and a small job may
	// take the free GPU.
	h.Advance(2 * time.Minute)
	process(t, h, h.NewEval(h.Job(ns, "ddp"), structs.EvalTriggerQueuedAllocs))
	process(t, h, h.NewEval(h.Job(ns, "ddp"), structs.EvalTriggerQueuedAllocs))
	if res, _ := h.State.ReservationByJob(ns, "ddp"); res == nil || res.ExpireTime != first.ExpireTime || res.Live(h.Now()) {
		t.Errorf("reservation after its timeout: %+v, want the expired one kept as it was", res)
	}
	if m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]; m == nil || !strings.Contains(m.Gang, "reservation expired after 1m0s") {
		t.Errorf("gang metric = %+v, want the expiry said", m)
	}
	process(t, h, h.RegisterJob(schedtest.GPUJob("small", 1, 1)))
	if n := len(h.LiveAllocs(ns, "small")); n != 1 {
		t.Errorf("small job placed %d after the reservation expired, want 1", n)
	}
}

func TestBackfillIntoAGangsReservation(t *testing.T) {
	// Two nodes of 2 GPUs; a filler with max_run_time 1h holds 3 of
	// them, so the waiting gang of 4 can start in an hour at the latest.
	// Until then its free GPU may run a job that ends sooner, and only
	// such a job.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 2, "", 80))
	filler := schedtest.GPUJob("filler", 3, 1)
	filler.MaxRunTime = time.Hour
	process(t, h, h.RegisterJob(filler))
	process(t, h, h.RegisterJob(gangJob("ddp", 4)))
	res, err := h.State.ReservationByJob(ns, "ddp")
	if err != nil || res == nil {
		t.Fatalf("reservation: %+v (%v)", res, err)
	}
	if want := h.Now().Add(time.Hour).UnixNano(); res.ReadyAt != want {
		t.Fatalf("reservation ready at %v, want the filler's end %v", time.Unix(0, res.ReadyAt), time.Unix(0, want))
	}

	tests := []struct {
		id     string
		maxRun time.Duration
		placed bool
	}{
		{"no-limit", 0, false},
		{"too-long", 2 * time.Hour, false},
		{"fits-the-gap", 30 * time.Minute, true},
	}
	for _, tt := range tests {
		job := schedtest.GPUJob(tt.id, 1, 1)
		job.MaxRunTime = tt.maxRun
		process(t, h, h.RegisterJob(job))
		if placed := len(h.LiveAllocs(ns, tt.id)) == 1; placed != tt.placed {
			t.Errorf("%s (max_run_time %v): placed %t, want %t", tt.id, tt.maxRun, placed, tt.placed)
		}
	}
}

func TestDroppedGangLeavesOthersAConsistentPlan(t *testing.T) {
	// A priority-80 job: a gang of 3 (one GPU each) and a single "eval"
	// task. The node's 2 GPUs are held at priority 20. The gang could
	// preempt both and still be one short, so it waits; "eval" is placed
	// as if the gang had never tried (preempting one), and the plan
	// commits without a refusal.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	process(t, h, h.RegisterJob(prioJob("low", 2, 1, 20)))
	job := gangJob("train", 3)
	job.Priority = 80
	ev := job.TaskGroups[0].Copy()
	ev.Name, ev.Count, ev.Gang = "eval", 1, nil
	job.TaskGroups = append(job.TaskGroups, ev)
	job.Canonicalize()
	process(t, h, h.RegisterJob(job))

	var gang, eval int
	for _, a := range h.LiveAllocs(ns, "train") {
		if a.TaskGroup == "eval" {
			eval++
		} else {
			gang++
		}
	}
	if gang != 0 || eval != 1 || len(h.LiveAllocs(ns, "low")) != 1 {
		t.Errorf("gang %d, eval %d, low %d live; want 0, 1, 1", gang, eval, len(h.LiveAllocs(ns, "low")))
	}
	e := lastUpdate(t, h)
	if m := e.FailedTGAllocs[schedtest.GPUGroup]; m == nil || m.Gang == "" || e.QueuedAllocations[schedtest.GPUGroup] != 3 {
		t.Errorf("gang group: metric %+v queued %d, want the gang reason and 3 queued", m, e.QueuedAllocations[schedtest.GPUGroup])
	}
	if _, failed := e.FailedTGAllocs["eval"]; failed {
		t.Errorf("eval group failed: %+v", e.FailedTGAllocs["eval"])
	}
}

func TestGangReservationHoldsOnlyItsShare(t *testing.T) {
	// One node of 8 GPUs, 7 held by a filler; a gang of 4 waits and holds
	// up to 4 of the node's GPUs. When 4 of the filler's end (5 free), a
	// small job may take the fifth, and the gang still gets its 4.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
	process(t, h, h.RegisterJob(schedtest.GPUJob("filler", 7, 1)))
	process(t, h, h.RegisterJob(gangJob("ddp", 4)))
	gangEval := lastUpdate(t, h)
	res, _ := h.State.ReservationByJob(ns, "ddp")
	if res == nil || len(res.Counts) != 1 || res.HeldOn(res.Nodes[0]) != 4 {
		t.Fatalf("reservation = %+v, want 4 GPUs of the node", res)
	}
	process(t, h, h.RegisterJob(schedtest.GPUJob("early", 1, 1)))
	if n := len(h.LiveAllocs(ns, "early")); n != 0 {
		t.Fatalf("a small job took the only free GPU, held for the gang")
	}
	for _, a := range h.LiveAllocs(ns, "filler")[:4] {
		h.SetClientStatus(a.ID, structs.AllocClientStatusComplete)
	}
	process(t, h, h.RegisterJob(schedtest.GPUJob("late", 1, 1)))
	if n := len(h.LiveAllocs(ns, "late")); n != 1 {
		t.Errorf("small job placed %d with 5 free and 4 held, want 1", n)
	}
	process(t, h, h.Eval(gangEval.BlockedEval))
	if n := len(h.LiveAllocs(ns, "ddp")); n != 4 {
		t.Errorf("gang placed %d, want 4", n)
	}
}
