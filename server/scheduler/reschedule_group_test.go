package scheduler_test

import (
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// TestGroupReschedulePolicyOverridesDefault runs a batch job whose group
// allows two replacements 2 seconds apart (the default: one, after 5s).
func TestGroupReschedulePolicyOverridesDefault(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	job := schedtest.GPUJob("train", 1, 1)
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{
		Attempts: 2, Interval: time.Hour, Delay: 2 * time.Second, DelayFunction: structs.DelayFunctionConstant,
	}
	process(t, h, h.RegisterJob(job))

	for attempt := 1; attempt <= 2; attempt++ {
		h.Advance(time.Minute)
		failAndProcess(t, h, "train")
		followUp := lastFollowUp(t, h, 2*time.Second)
		h.Advance(2 * time.Second)
		process(t, h, h.Eval(followUp.ID))
		onlyAlloc(t, h, "train")
	}

	// The third failure within the hour is not replaced.
	h.Advance(time.Minute)
	created := len(h.CreatedEvals())
	failAndProcess(t, h, "train")
	if live := h.LiveAllocs(ns, "train"); len(live) != 0 {
		t.Fatalf("live: got %d, want 0 (2 attempts used up)", len(live))
	}
	if n := len(h.CreatedEvals()); n != created {
		t.Errorf("created evals: got %d, want still %d", n, created)
	}
}

// TestGroupReschedulePolicyDisabled checks that attempts = 0 without
// unlimited leaves a failed allocation failed at once.
func TestGroupReschedulePolicyDisabled(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	job := schedtest.ServiceJob("web", 1)
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{DelayFunction: structs.DelayFunctionConstant}
	process(t, h, h.RegisterJob(job))
	created := len(h.CreatedEvals())
	failAndProcess(t, h, "web")
	if live := h.LiveAllocs(ns, "web"); len(live) != 0 {
		t.Fatalf("live: got %d, want 0 (rescheduling off)", len(live))
	}
	if n := len(h.CreatedEvals()); n != created {
		t.Errorf("created evals: got %d, want still %d (no follow-up)", n, created)
	}
}
