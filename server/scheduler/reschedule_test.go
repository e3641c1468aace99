package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// failAndProcess marks the job's single live allocation failed and runs
// an alloc-failure eval, as the servers do when a client reports it.
func failAndProcess(t *testing.T, h *schedtest.Harness, jobID string) *structs.Allocation {
	t.Helper()
	failed := onlyAlloc(t, h, jobID)
	h.SetClientStatus(failed.ID, structs.AllocClientStatusFailed)
	process(t, h, h.NewEval(h.Job(ns, jobID), structs.EvalTriggerRetryFailed))
	return failed
}

// lastFollowUp returns the last created eval, which must be a pending
// follow-up waiting want.
func lastFollowUp(t *testing.T, h *schedtest.Harness, want time.Duration) *structs.Evaluation {
	t.Helper()
	created := h.CreatedEvals()
	if len(created) == 0 {
		t.Fatalf("no follow-up eval created")
	}
	e := created[len(created)-1]
	if e.Status != structs.EvalStatusPending || e.TriggeredBy != structs.EvalTriggerRetryFailed || e.Wait != want {
		t.Fatalf("follow-up: got %s %s wait %s, want pending %s wait %s", e.Status, e.TriggeredBy, e.Wait, structs.EvalTriggerRetryFailed, want)
	}
	if u := lastUpdate(t, h); u.NextEval != e.ID {
		t.Errorf("eval's NextEval: got %q, want the follow-up %s", u.NextEval, e.ID)
	}
	return e
}

func TestServiceRescheduleWaitsAndBacksOff(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	process(t, h, h.RegisterJob(schedtest.ServiceJob("web", 1)))

	// First failure: replaced 30s later, not at once.
	first := failAndProcess(t, h, "web")
	if live := h.LiveAllocs(ns, "web"); len(live) != 0 {
		t.Fatalf("live right after the failure: got %d, want 0 (delayed)", len(live))
	}
	followUp := lastFollowUp(t, h, 30*time.Second)
	h.Advance(30 * time.Second)
	process(t, h, h.Eval(followUp.ID))
	second := onlyAlloc(t, h, "web")
	if second.Name != first.Name {
		t.Errorf("replacement: got %s, want %s", second.Name, first.Name)
	}

	// Second failure within the hour: the delay doubles.
	h.Advance(time.Minute)
	failAndProcess(t, h, "web")
	followUp = lastFollowUp(t, h, time.Minute)
	h.Advance(time.Minute)
	process(t, h, h.Eval(followUp.ID))
	onlyAlloc(t, h, "web")
}

func TestBatchRescheduledOnceThenLeftFailed(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	process(t, h, h.RegisterJob(schedtest.GPUJob("train", 1, 1)))

	failAndProcess(t, h, "train")
	followUp := lastFollowUp(t, h, 5*time.Second)
	h.Advance(5 * time.Second)
	process(t, h, h.Eval(followUp.ID))
	onlyAlloc(t, h, "train")

	// The replacement fails too: Nomad's batch default allows one attempt
	// in 24h, so it stays failed, and the eval says why.
	h.Advance(time.Minute)
	created := len(h.CreatedEvals())
	failAndProcess(t, h, "train")
	h.Advance(time.Hour)
	process(t, h, h.NewEval(h.Job(ns, "train"), structs.EvalTriggerNodeUpdate))
	if live := h.LiveAllocs(ns, "train"); len(live) != 0 {
		t.Fatalf("live: got %d, want 0 (attempts used up)", len(live))
	}
	if n := len(h.CreatedEvals()); n != created {
		t.Errorf("created evals: got %d, want still %d (no follow-up, no blocked eval)", n, created)
	}
	e := lastUpdate(t, h)
	if e.Status != structs.EvalStatusComplete || !strings.Contains(e.StatusDescription, "train.train[0]") {
		t.Errorf("eval: got %s %q, want complete naming train.train[0]", e.Status, e.StatusDescription)
	}
	if q := e.QueuedAllocations["train"]; q != 0 {
		t.Errorf("queued: got %d, want 0", q)
	}
	if job := h.Job(ns, "train"); job.Status != structs.JobStatusDead {
		t.Errorf("job status: got %s, want dead", job.Status)
	}

	// A day later the name may be tried again.
	h.Advance(24 * time.Hour)
	process(t, h, h.NewEval(h.Job(ns, "train"), structs.EvalTriggerNodeUpdate))
	onlyAlloc(t, h, "train")
}

func TestJobUpdateIsNotAReschedule(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	job := schedtest.GPUJob("train", 1, 1)
	process(t, h, h.RegisterJob(job))
	failAndProcess(t, h, "train")
	h.Advance(5 * time.Second)
	process(t, h, h.Eval(lastFollowUp(t, h, 5*time.Second).ID))
	failAndProcess(t, h, "train") // attempts used up for this spec

	fixed := job.Copy()
	fixed.TaskGroups[0].Tasks[0].Config["command"] = "/bin/fixed"
	process(t, h, h.RegisterJob(fixed))
	if a := onlyAlloc(t, h, "train"); a.Job.TaskGroups[0].Tasks[0].Config["command"] != "/bin/fixed" {
		t.Errorf("placed alloc runs %v, want the new spec", a.Job.TaskGroups[0].Tasks[0].Config["command"])
	}
}

func TestLostAllocIsNotDelayed(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	h.UpsertNode(schedtest.Node("cpu-2", 0, "", 0))
	process(t, h, h.RegisterJob(schedtest.ServiceJob("web", 1)))
	old := onlyAlloc(t, h, "web")
	h.SetNodeStatus(old.NodeID, structs.NodeStatusDown)
	process(t, h, h.NewEval(h.Job(ns, "web"), structs.EvalTriggerNodeUpdate))
	if repl := onlyAlloc(t, h, "web"); repl.ID == old.ID {
		t.Error("lost alloc not replaced at once")
	}
}

func TestReschedulePolicyDue(t *testing.T) {
	now := schedtest.Epoch.Add(48 * time.Hour)
	ago := func(ds ...time.Duration) []time.Time {
		var out []time.Time
		for _, d := range ds {
			out = append(out, now.Add(-d))
		}
		return out
	}
	batch := scheduler.DefaultReschedulePolicy(structs.JobTypeBatch)
	service := scheduler.DefaultReschedulePolicy(structs.JobTypeService)
	growing := func(fn string) scheduler.ReschedulePolicy {
		return scheduler.ReschedulePolicy{Unlimited: true, Interval: time.Hour, Delay: 10 * time.Second, DelayFunction: fn, MaxDelay: time.Minute}
	}
	constant, fibonacci, exponential := growing(structs.DelayFunctionConstant), growing(structs.DelayFunctionFibonacci), growing(structs.DelayFunctionExponential)
	tests := []struct {
		name     string
		policy   scheduler.ReschedulePolicy
		failures []time.Time
		wantIn   time.Duration // from now; negative is already due
		wantOK   bool
	}{
		{"never failed", batch, nil, 0, true},
		{"batch first failure", batch, ago(time.Second), 4 * time.Second, true},
		{"batch second failure", batch, ago(time.Hour, time.Second), 0, false},
		{"batch old failure forgotten", batch, ago(25*time.Hour, time.Second), 4 * time.Second, true},
		{"service first failure", service, ago(0), 30 * time.Second, true},
		{"service third failure", service, ago(10*time.Minute, 5*time.Minute, 0), 2 * time.Minute, true},
		{"service delay capped", service, ago(59*time.Minute, 58*time.Minute, 57*time.Minute, 56*time.Minute, 55*time.Minute, 54*time.Minute, 53*time.Minute, 0), time.Hour, true},
		{"service due long ago", service, ago(2 * time.Hour), -2*time.Hour + 30*time.Second, true},
		{"constant ignores max delay", constant, ago(3*time.Second, 2*time.Second, 0), 10 * time.Second, true},
		{"fibonacci second failure", fibonacci, ago(time.Minute, 0), 10 * time.Second, true},
		{"fibonacci fourth failure", fibonacci, ago(3*time.Minute, 2*time.Minute, time.Minute, 0), 30 * time.Second, true},
		{"fibonacci fifth failure", fibonacci, ago(4*time.Minute, 3*time.Minute, 2*time.Minute, time.Minute, 0), 50 * time.Second, true},
		{"fibonacci capped", fibonacci, ago(6*time.Minute, 5*time.Minute, 4*time.Minute, 3*time.Minute, 2*time.Minute, time.Minute, 0), time.Minute, true},
		{"exponential third failure", exponential, ago(2*time.Minute, time.Minute, 0), 40 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, ok := scheduler.DuePolicy(tt.policy, tt.failures, now)
			if ok != tt.wantOK || (ok && at.Sub(now) != tt.wantIn) {
				t.Errorf("got due in %s (ok %v), want in %s (ok %v)", at.Sub(now), ok, tt.wantIn, tt.wantOK)
			}
		})
	}
}
