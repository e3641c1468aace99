package scheduler_test

import (
	"slices"
	"testing"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// canaryService runs web with count allocations, max_parallel and
// canary, all running and healthy in their first deployment.
func canaryService(t *testing.T, h *schedtest.Harness, count, maxParallel, canary int) *structs.Job {
	t.Helper()
	runningService(t, h, count, maxParallel)
	d := h.LatestDeployment(ns, "web")
	if d == nil || d.JobVersion != 0 || d.TaskGroups["web"].DesiredTotal != count || d.TaskGroups["web"].DesiredCanaries != 0 {
		t.Fatalf("first deployment = %+v, want one of version 0 for %d allocations, no canaries", d, count)
	}
	markHealthy(t, h)
	job := h.Job(ns, "web")
	job.Update.Canary, job.TaskGroups[0].Update.Canary = canary, canary
	return job
}

// markHealthy reports every live allocation of web running and healthy.
func markHealthy(t *testing.T, h *schedtest.Harness) {
	t.Helper()
	markRunning(t, h)
	for _, a := range h.LiveAllocs(ns, "web") {
		if a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil {
			h.SetHealth(a.ID, true)
		}
	}
}

// canaries returns web's live canaries of deployment id.
func canaries(h *schedtest.Harness, id string) []*structs.Allocation {
	var out []*structs.Allocation
	for _, a := range h.LiveAllocs(ns, "web") {
		if a.DeploymentID == id && a.DeploymentStatus.IsCanary() {
			out = append(out, a)
		}
	}
	return out
}

// TestCanaryPlacedBesideOldAllocs: an update with canary = 1 creates a
// deployment that wants one canary, places it beside the three old
// allocations and stops none; more evaluations change nothing until it
// is promoted.
func TestCanaryPlacedBesideOldAllocs(t *testing.T) {
	h := schedtest.NewHarness(t)
	job := canaryService(t, h, 3, 1, 1)
	process(t, h, h.RegisterJob(envChanged(job, "2")))

	d := h.LatestDeployment(ns, "web")
	if d == nil || d.JobVersion != 1 || d.Status != structs.DeploymentStatusRunning || d.TaskGroups["web"].DesiredCanaries != 1 ||
		d.StatusDescription != structs.DeploymentDescRunningNeedsPromotion {
		t.Fatalf("deployment = %+v, want version 1 running, one canary, needing promotion", d)
	}
	want := []string{"web.web[0]@0", "web.web[0]@1", "web.web[1]@0", "web.web[2]@0"}
	if got := versions(h); !slices.Equal(got, want) {
		t.Fatalf("live: got %v, want %v", got, want)
	}
	c := canaries(h, d.ID)
	if len(c) != 1 || d.TaskGroups["web"].PlacedAllocs != 1 {
		t.Fatalf("canaries %d, placed %d; want 1 counted in the deployment", len(c), d.TaskGroups["web"].PlacedAllocs)
	}
	if st := h.LatestDeployment(ns, "web").TaskGroups["web"].PlacedCanaries; !slices.Equal(st, []string{c[0].ID}) {
		t.Errorf("PlacedCanaries = %v, want [%s]", st, c[0].ID)
	}
	for _, a := range h.Allocs(ns, "web") {
		if a.DesiredStatus == structs.AllocDesiredStatusStop {
			t.Errorf("stopped %s before promotion", a.Name)
		}
	}
	markHealthy(t, h)
	plans := len(h.Plans())
	rollingEval(t, h)
	if got := versions(h); !slices.Equal(got, want) || len(h.Plans()) != plans {
		t.Errorf("healthy canary, not promoted: got %v and %d new plans, want %v and none", got, len(h.Plans())-plans, want)
	}
	if got := h.LatestDeployment(ns, "web").TaskGroups["web"].HealthyAllocs; got != 1 {
		t.Errorf("HealthyAllocs = %d, want 1", got)
	}
}

// TestPromotionReplacesOldAllocsMaxParallel: once promoted, the canary
// takes its name (the old allocation there stops) and the rest are
// replaced max_parallel at a time as replacements become healthy.
func TestPromotionReplacesOldAllocsMaxParallel(t *testing.T) {
	h := schedtest.NewHarness(t)
	job := canaryService(t, h, 4, 1, 1)
	process(t, h, h.RegisterJob(envChanged(job, "2")))
	d := h.LatestDeployment(ns, "web")
	markHealthy(t, h)
	h.PromoteDeployment(d.ID)
	rollingEval(t, h)

	want := []string{"web.web[0]@1", "web.web[1]@1", "web.web[2]@0", "web.web[3]@0"}
	if got := versions(h); !slices.Equal(got, want) {
		t.Fatalf("after promotion: got %v, want %v", got, want)
	}
	for _, a := range h.Allocs(ns, "web") {
		if a.DesiredStatus == structs.AllocDesiredStatusStop && a.DesiredDescription != scheduler.DescUpdated {
			t.Errorf("stopped %s as %q, want %q", a.Name, a.DesiredDescription, scheduler.DescUpdated)
		}
	}
	// web[1]'s replacement is not healthy yet: nothing more moves.
	rollingEval(t, h)
	if got := versions(h); !slices.Equal(got, want) {
		t.Fatalf("replacement not healthy: got %v, want %v", got, want)
	}
	for i := 2; i < 4; i++ {
		markHealthy(t, h)
		rollingEval(t, h)
		want[i] = want[i][:len(want[i])-1] + "1"
		if got := versions(h); !slices.Equal(got, want) {
			t.Fatalf("step %d: got %v, want %v", i, got, want)
		}
	}
	for _, a := range h.LiveAllocs(ns, "web") {
		if a.DeploymentID != d.ID {
			t.Errorf("%s in deployment %q, want %q", a.Name, a.DeploymentID, d.ID)
		}
		if a.Name != "web.web[0]" && a.PreviousAllocation == "" {
			t.Errorf("%s replaced no allocation, want its predecessor named", a.Name)
		}
	}
}

// TestDeploymentHoldsWhenPausedOrFailed: a paused deployment places no
// canary, a failed one replaces nothing more.
func TestDeploymentHoldsWhenPausedOrFailed(t *testing.T) {
	h := schedtest.NewHarness(t)
	job := canaryService(t, h, 3, 1, 0)
	process(t, h, h.RegisterJob(envChanged(job, "2")))
	d := h.LatestDeployment(ns, "web")
	want := []string{"web.web[0]@1", "web.web[1]@0", "web.web[2]@0"}
	if got := versions(h); !slices.Equal(got, want) {
		t.Fatalf("rolling without canaries: got %v, want %v", got, want)
	}
	h.SetDeploymentStatus(d.ID, structs.DeploymentStatusFailed)
	markHealthy(t, h)
	rollingEval(t, h)
	if got := versions(h); !slices.Equal(got, want) {
		t.Errorf("failed deployment moved on: got %v, want %v", got, want)
	}
}

// TestRevertStopsCanaries: a new version (a revert to the old spec)
// cancels the deployment; its canary is stopped and the old allocations
// stay, moved in place to the new version.
func TestRevertStopsCanaries(t *testing.T) {
	h := schedtest.NewHarness(t)
	job := canaryService(t, h, 2, 1, 1)
	process(t, h, h.RegisterJob(envChanged(job, "2")))
	bad := h.LatestDeployment(ns, "web")
	reverted := job.Copy()
	process(t, h, h.RegisterJob(reverted))

	if got := h.LatestDeployment(ns, "web"); got.ID == bad.ID || got.JobVersion != 2 {
		t.Errorf("latest deployment %s version %d, want a new one of version 2", got.ID, got.JobVersion)
	}
	d, err := h.State.DeploymentByID(nil, bad.ID)
	if err != nil || d.Status != structs.DeploymentStatusCancelled {
		t.Errorf("old deployment %v (%v), want cancelled", d.Status, err)
	}
	want := []string{"web.web[0]@2", "web.web[1]@2"}
	if got := versions(h); !slices.Equal(got, want) {
		t.Errorf("after revert: got %v, want %v", got, want)
	}
	if len(canaries(h, bad.ID)) != 0 {
		t.Error("the canary of the cancelled deployment still runs")
	}
}
