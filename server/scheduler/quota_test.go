package scheduler_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

const teamA = "team-a"

// setQuota stores quota name with limit in region "global" and puts
// namespace team-a under it.
func setQuota(t *testing.T, h *schedtest.Harness, name string, limit structs.RegionLimit) {
	t.Helper()
	q := &structs.QuotaSpec{Name: name, Limits: []*structs.QuotaLimit{{Region: "global", RegionLimit: &limit}}}
	if err := h.State.UpsertQuotaSpecs(h.NextIndex(), []*structs.QuotaSpec{q}); err != nil {
		t.Fatalf("upsert quota: %v", err)
	}
	ns := &structs.Namespace{Name: teamA, Quota: name}
	if err := h.State.UpsertNamespaces(h.NextIndex(), []*structs.Namespace{ns}); err != nil {
		t.Fatalf("upsert namespace: %v", err)
	}
}

// teamJob returns schedtest.GPUJob in namespace team-a.
func teamJob(id string, count int, gpus uint64) *structs.Job {
	job := schedtest.GPUJob(id, count, gpus)
	job.Namespace = teamA
	return job
}

// quotaReasons returns the quota reasons the evaluation's failed groups
// carry.
func quotaReasons(e *structs.Evaluation) []string {
	var out []string
	for _, m := range e.FailedTGAllocs {
		out = append(out, m.QuotaExhausted...)
	}
	return out
}

// blockedEval returns the blocked evaluation the scheduler created last.
func blockedEval(t *testing.T, h *schedtest.Harness) *structs.Evaluation {
	t.Helper()
	created := h.CreatedEvals()
	for i := len(created) - 1; i >= 0; i-- {
		if created[i].Status == structs.EvalStatusBlocked {
			return h.Eval(created[i].ID)
		}
	}
	t.Fatalf("no blocked eval created")
	return nil
}

// TestQuotaHoldsThirdGPUUntilRaised is must-hold 3: namespace team-a
// with a quota of 2 GPUs runs 2 single-GPU allocations and holds the
// third waiting with a reason naming the quota; raising the quota places
// it.
func TestQuotaHoldsThirdGPUUntilRaised(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
	setQuota(t, h, "team-a-gpus", structs.RegionLimit{GPUs: 2})

	process(t, h, h.RegisterJob(teamJob("train", 3, 1)))
	if got := len(h.LiveAllocs(teamA, "train")); got != 2 {
		t.Fatalf("placed %d allocations, want 2", got)
	}
	e := lastUpdate(t, h)
	want := `quota "team-a-gpus" exhausted: gpu 2 of 2 used, need 1`
	if got := quotaReasons(e); !slices.Equal(got, []string{want}) {
		t.Fatalf("quota reasons = %q, want [%q]", got, want)
	}
	if e.QueuedAllocations[schedtest.GPUGroup] != 1 {
		t.Errorf("queued = %v, want 1 for %s", e.QueuedAllocations, schedtest.GPUGroup)
	}
	blocked := blockedEval(t, h)
	if got := quotaReasons(blocked); !slices.Equal(got, []string{want}) {
		t.Errorf("blocked eval reasons = %q, want [%q]", got, want)
	}

	// Woken without a change (another capacity change elsewhere), the
	// blocked evaluation goes back to waiting with the same reason.
	process(t, h, blocked)
	if got := len(h.LiveAllocs(teamA, "train")); got != 2 {
		t.Fatalf("placed %d after a retry without a change, want 2", got)
	}
	if n := len(h.ReblockedEvals()); n != 1 {
		t.Fatalf("reblocked %d evals, want 1", n)
	}

	setQuota(t, h, "team-a-gpus", structs.RegionLimit{GPUs: 3})
	process(t, h, h.Eval(blocked.ID))
	if got := len(h.LiveAllocs(teamA, "train")); got != 3 {
		t.Fatalf("placed %d after the quota was raised, want 3", got)
	}
	if e := lastUpdate(t, h); e.Status != structs.EvalStatusComplete || len(e.FailedTGAllocs) != 0 {
		t.Errorf("eval after the raise: status %s, failed %v; want complete with none", e.Status, e.FailedTGAllocs)
	}
}

// TestQuotaFreedByFinishedAllocations: usage dropping (an allocation of
// another job in the namespace finishing) lets a waiting job place.
func TestQuotaFreedByFinishedAllocations(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
	setQuota(t, h, "q", structs.RegionLimit{GPUs: 2})

	process(t, h, h.RegisterJob(teamJob("first", 2, 1)))
	process(t, h, h.RegisterJob(teamJob("second", 1, 1)))
	if got := len(h.LiveAllocs(teamA, "second")); got != 0 {
		t.Fatalf("second job placed %d over the quota, want 0", got)
	}
	blocked := blockedEval(t, h)

	h.SetClientStatus(h.LiveAllocs(teamA, "first")[0].ID, structs.AllocClientStatusComplete)
	process(t, h, blocked)
	if got := len(h.LiveAllocs(teamA, "second")); got != 1 {
		t.Fatalf("second job placed %d after a GPU was freed, want 1", got)
	}
}

// TestQuotaDimensions checks each limit: what places, and the reason for
// the first placement refused.
func TestQuotaDimensions(t *testing.T) {
	slice := func(compute int) func(*structs.Job) {
		return func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.Devices[0].Compute = compute }
	}
	tests := []struct {
		name       string
		limit      structs.RegionLimit
		region     string // the job's; "" is global
		count      int
		gpus       uint64
		change     func(*structs.Job)
		wantPlaced int
		wantReason string
	}{
		{name: "cpu", limit: structs.RegionLimit{CPU: 2500}, count: 3, wantPlaced: 2,
			wantReason: `quota "q" exhausted: cpu 2000 MHz of 2500 MHz used, need 1000 MHz`},
		{name: "memory", limit: structs.RegionLimit{MemoryMB: 2048}, count: 3, wantPlaced: 2,
			wantReason: `quota "q" exhausted: memory 2 GiB of 2 GiB used, need 1 GiB`},
		{name: "gpu memory of whole GPUs", limit: structs.RegionLimit{GPUMemoryMB: 160 << 10}, count: 3, gpus: 1, wantPlaced: 2,
			wantReason: `quota "q" exhausted: gpu_memory 160 GiB of 160 GiB used, need 80 GiB`},
		{name: "slices count their compute share", limit: structs.RegionLimit{GPUs: 1}, count: 5, gpus: 1, change: slice(25), wantPlaced: 4,
			wantReason: `quota "q" exhausted: gpu 1 of 1 used, need 0.25`},
		{name: "two-GPU allocations", limit: structs.RegionLimit{GPUs: 3}, count: 2, gpus: 2, wantPlaced: 1,
			wantReason: `quota "q" exhausted: gpu 2 of 3 used, need 2`},
		{name: "none allowed", limit: structs.RegionLimit{GPUs: -1}, count: 1, gpus: 1, wantPlaced: 0,
			wantReason: `quota "q" exhausted: gpu none allowed, need 1`},
		{name: "none allowed but not asked", limit: structs.RegionLimit{GPUs: -1}, count: 2, wantPlaced: 2},
		{name: "zero is unlimited", limit: structs.RegionLimit{GPUs: 0, CPU: 100000}, count: 6, gpus: 1, wantPlaced: 6},
		{name: "no limit in the job's region", limit: structs.RegionLimit{GPUs: 1}, region: "eu", count: 3, gpus: 1, wantPlaced: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
			setQuota(t, h, "q", tt.limit)
			job := teamJob("j", tt.count, tt.gpus)
			if tt.region != "" {
				job.Region = tt.region
			}
			if tt.change != nil {
				tt.change(job)
			}
			process(t, h, h.RegisterJob(job))
			if got := len(h.LiveAllocs(teamA, "j")); got != tt.wantPlaced {
				t.Errorf("placed %d, want %d", got, tt.wantPlaced)
			}
			var want []string
			if tt.wantReason != "" {
				want = []string{tt.wantReason}
			}
			if got := quotaReasons(lastUpdate(t, h)); !slices.Equal(got, want) {
				t.Errorf("quota reasons = %q, want %q", got, want)
			}
		})
	}
}

// TestQuotaAllowsReplacementWithinIt: a destructive update of a job at
// its quota replaces allocations within the quota the old ones held.
func TestQuotaAllowsReplacementWithinIt(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
	setQuota(t, h, "q", structs.RegionLimit{GPUs: 2})
	process(t, h, h.RegisterJob(teamJob("train", 2, 1)))
	old := h.LiveAllocs(teamA, "train")
	if len(old) != 2 {
		t.Fatalf("placed %d, want 2", len(old))
	}

	job := h.Job(teamA, "train").Copy()
	job.TaskGroups[0].Tasks[0].Env = map[string]string{"STEP": "2"}
	process(t, h, h.RegisterJob(job))
	live := h.LiveAllocs(teamA, "train")
	if len(live) != 2 || slices.ContainsFunc(live, func(a *structs.Allocation) bool { return a.ID == old[0].ID || a.ID == old[1].ID }) {
		t.Fatalf("live after the update = %d (old ones kept: %v), want 2 replacements", len(live), live)
	}
	if got := quotaReasons(lastUpdate(t, h)); len(got) != 0 {
		t.Errorf("quota reasons = %q, want none", got)
	}
}

// TestQuotaSharedByNamespaces: a quota named by two namespaces is one
// pool for both.
func TestQuotaSharedByNamespaces(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 8, "", 80))
	setQuota(t, h, "shared", structs.RegionLimit{GPUs: 3})
	if err := h.State.UpsertNamespaces(h.NextIndex(), []*structs.Namespace{{Name: "team-b", Quota: "shared"}}); err != nil {
		t.Fatal(err)
	}
	process(t, h, h.RegisterJob(teamJob("a", 2, 1)))
	b := schedtest.GPUJob("b", 2, 1)
	b.Namespace = "team-b"
	process(t, h, h.RegisterJob(b))
	if got := len(h.LiveAllocs("team-b", "b")); got != 1 {
		t.Fatalf("team-b placed %d, want 1 (3 shared, 2 held by team-a)", got)
	}
	if got := quotaReasons(lastUpdate(t, h)); len(got) != 1 || !strings.Contains(got[0], `gpu 3 of 3 used`) {
		t.Errorf("quota reasons = %q, want gpu 3 of 3 used", got)
	}
}

// TestQuotaSystemJob: the system scheduler asks the quota too.
func TestQuotaSystemJob(t *testing.T) {
	h := schedtest.NewHarness(t)
	for _, name := range []string{"gpu-1", "gpu-2", "gpu-3"} {
		h.UpsertNode(schedtest.Node(name, 2, "", 80))
	}
	setQuota(t, h, "q", structs.RegionLimit{GPUs: 2})
	job := systemJob("agents", structs.JobTypeSystem)
	job.Namespace = teamA
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	job.Canonicalize()
	processSystem(t, h, h.RegisterJob(job))
	if got := len(h.LiveAllocs(teamA, "agents")); got != 2 {
		t.Fatalf("placed %d, want 2 of 3 nodes", got)
	}
	e := lastUpdate(t, h)
	want := `quota "q" exhausted: gpu 2 of 2 used, need 1`
	if got := quotaReasons(e); !slices.Equal(got, []string{want}) {
		t.Errorf("quota reasons = %q, want [%q]", got, want)
	}
}
