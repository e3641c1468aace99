package scheduler_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// runningService registers a service job of count allocations with the
// given max_parallel on one node and reports them all running.
func runningService(t *testing.T, h *schedtest.Harness, count, maxParallel int) *structs.Job {
	t.Helper()
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	job := schedtest.ServiceJob("web", count)
	job.Update.MaxParallel = maxParallel
	job.TaskGroups[0].Update.MaxParallel = maxParallel
	process(t, h, h.RegisterJob(job))
	markRunning(t, h)
	return job
}

// markRunning reports every live allocation of web running.
func markRunning(t *testing.T, h *schedtest.Harness) {
	t.Helper()
	for _, a := range h.LiveAllocs(ns, "web") {
		if a.ClientStatus != structs.AllocClientStatusRunning {
			h.SetClientStatus(a.ID, structs.AllocClientStatusRunning)
		}
	}
}

// versions returns, in name order, "name@version" of web's live
// allocations.
func versions(h *schedtest.Harness) []string {
	var out []string
	for _, a := range h.LiveAllocs(ns, "web") {
		out = append(out, fmt.Sprintf("%s@%d", a.Name, a.Job.Version))
	}
	slices.Sort(out)
	return out
}

// rollingEval processes an evaluation as the servers create it when a
// replacement starts running.
func rollingEval(t *testing.T, h *schedtest.Harness) {
	t.Helper()
	process(t, h, h.NewEval(h.Job(ns, "web"), structs.EvalTriggerRollingUpdate))
}

func envChanged(job *structs.Job, v string) *structs.Job {
	c := job.Copy()
	c.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": v}
	return c
}

// TestRollingUpdateOneAtATime: with max_parallel = 1, a changed task
// replaces one allocation per evaluation, and the next only once the
// replacement runs.
func TestRollingUpdateOneAtATime(t *testing.T) {
	h := schedtest.NewHarness(t)
	job := runningService(t, h, 5, 1)

	process(t, h, h.RegisterJob(envChanged(job, "2")))
	want := []string{"web.web[0]@1", "web.web[1]@0", "web.web[2]@0", "web.web[3]@0", "web.web[4]@0"}
	if got := versions(h); !slices.Equal(got, want) {
		t.Fatalf("after the update: got %v, want %v", got, want)
	}
	for _, a := range h.Allocs(ns, "web") {
		if a.DesiredStatus == structs.AllocDesiredStatusStop && (a.Name != "web.web[0]" || a.DesiredDescription != scheduler.DescUpdated) {
			t.Errorf("stopped %s (%q), want only web.web[0] (%q)", a.Name, a.DesiredDescription, scheduler.DescUpdated)
		}
	}

	// The replacement is still pending: another evaluation waits.
	plans := len(h.Plans())
	rollingEval(t, h)
	if got := versions(h); !slices.Equal(got, want) || len(h.Plans()) != plans {
		t.Fatalf("before the replacement runs: got %v and %d plans, want %v and no new plan", got, len(h.Plans())-plans, want)
	}

	for i := 1; i < 5; i++ {
		markRunning(t, h)
		rollingEval(t, h)
		want[i] = fmt.Sprintf("web.web[%d]@1", i)
		if got := versions(h); !slices.Equal(got, want) {
			t.Fatalf("batch %d: got %v, want %v", i, got, want)
		}
	}
	if e := lastUpdate(t, h); e.Status != structs.EvalStatusComplete {
		t.Errorf("eval: got %s, want complete", e.Status)
	}
	if n := len(h.LiveAllocs(ns, "web")); n != 5 {
		t.Errorf("live: got %d, want 5 throughout", n)
	}
}

// TestRollingUpdateTwoAtATime: max_parallel = 2 keeps two replacements in
// flight; one running frees one slot.
func TestRollingUpdateTwoAtATime(t *testing.T) {
	h := schedtest.NewHarness(t)
	job := runningService(t, h, 5, 2)

	process(t, h, h.RegisterJob(envChanged(job, "2")))
	want := []string{"web.web[0]@1", "web.web[1]@1", "web.web[2]@0", "web.web[3]@0", "web.web[4]@0"}
	if got := versions(h); !slices.Equal(got, want) {
		t.Fatalf("first batch: got %v, want %v", got, want)
	}

	for _, a := range h.LiveAllocs(ns, "web") {
		if a.Name == "web.web[0]" {
			h.SetClientStatus(a.ID, structs.AllocClientStatusRunning)
		}
	}
	rollingEval(t, h)
	want[2] = "web.web[2]@1"
	if got := versions(h); !slices.Equal(got, want) {
		t.Fatalf("one running: got %v, want %v", got, want)
	}

	markRunning(t, h)
	rollingEval(t, h)
	want[3], want[4] = "web.web[3]@1", "web.web[4]@1"
	if got := versions(h); !slices.Equal(got, want) {
		t.Fatalf("all running: got %v, want %v", got, want)
	}
}

// TestRollingUpdateScaleUpNotLimited: new names of a scale-up are placed
// at once, beside the first batch of the rolling replacement.
func TestRollingUpdateScaleUpNotLimited(t *testing.T) {
	h := schedtest.NewHarness(t)
	job := runningService(t, h, 2, 1)

	changed := envChanged(job, "2")
	changed.TaskGroups[0].Count = 4
	process(t, h, h.RegisterJob(changed))

	want := []string{"web.web[0]@1", "web.web[1]@0", "web.web[2]@1", "web.web[3]@1"}
	if got := versions(h); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestRollingUpdateBatchAllAtOnce: batch jobs ignore the update block.
func TestRollingUpdateBatchAllAtOnce(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
	job := schedtest.GPUJob("train", 3, 1)
	job.Update = &structs.UpdateStrategy{MaxParallel: 1}
	job.Canonicalize()
	process(t, h, h.RegisterJob(job))

	changed := job.Copy()
	changed.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "2"}
	process(t, h, h.RegisterJob(changed))

	for _, a := range h.LiveAllocs(ns, "train") {
		if a.Job.Version != 1 {
			t.Errorf("%s: got version %d, want 1", a.Name, a.Job.Version)
		}
	}
	if n := len(h.LiveAllocs(ns, "train")); n != 3 {
		t.Errorf("live: got %d, want 3", n)
	}
}

// TestRollingUpdateWaitsMinHealthyTime: a replacement counts healthy only
// after running min_healthy_time; until then the next batch waits, with a
// follow-up evaluation for when it will be.
func TestRollingUpdateWaitsMinHealthyTime(t *testing.T) {
	h := schedtest.NewHarness(t)
	job := runningService(t, h, 2, 1)
	v2 := envChanged(job, "2")
	v2.TaskGroups[0].Update.MinHealthyTime = 30 * time.Second
	process(t, h, h.RegisterJob(v2))

	// The replacement starts running now.
	var repl *structs.Allocation
	for _, a := range h.LiveAllocs(ns, "web") {
		if a.Job.Version == 1 {
			repl = a
		}
	}
	if repl == nil {
		t.Fatalf("no replacement placed: %v", versions(h))
	}
	running := &structs.Allocation{ID: repl.ID, ClientStatus: structs.AllocClientStatusRunning,
		TaskStates: map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: h.Now()}}}
	if err := h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{running}); err != nil {
		t.Fatal(err)
	}
	rollingEval(t, h)
	if got, want := versions(h), []string{"web.web[0]@1", "web.web[1]@0"}; !slices.Equal(got, want) && !slices.Equal(got, []string{"web.web[0]@0", "web.web[1]@1"}) {
		t.Fatalf("before min_healthy_time: got %v, want one replaced and one old (%v)", got, want)
	}
	e := lastUpdate(t, h)
	next := h.Eval(e.NextEval)
	if next == nil || next.Wait != 30*time.Second {
		t.Fatalf("follow-up eval = %+v, want one due when the replacement is healthy", next)
	}

	// Past min_healthy_time the follow-up replaces the other.
	h.Advance(31 * time.Second)
	process(t, h, next)
	for _, v := range versions(h) {
		if !strings.HasSuffix(v, "@1") {
			t.Errorf("after min_healthy_time: %v, want both on version 1", versions(h))
			break
		}
	}
}
