package scheduler_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// prioJob is a batch job of count allocations of gpus GPUs each at
// priority prio.
func prioJob(id string, count int, gpus uint64, prio int) *structs.Job {
	job := schedtest.GPUJob(id, count, gpus)
	job.Priority = prio
	return job
}

// preempted returns the IDs of the job's allocations preempted by by.
func preempted(h *schedtest.Harness, jobID, by string) []string {
	var out []string
	for _, a := range h.Allocs(ns, jobID) {
		if a.PreemptedByAllocation == by {
			out = append(out, a.ID)
		}
	}
	slices.Sort(out)
	return out
}

func TestPreemptSmallestSet(t *testing.T) {
	// One node of 4 GPUs full of four priority-20 single-GPU allocations:
	// a priority-80 job asking 2 GPUs preempts exactly two of them.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	process(t, h, h.RegisterJob(prioJob("low", 4, 1, 20)))

	process(t, h, h.RegisterJob(prioJob("high", 1, 2, 80)))
	a := onlyAlloc(t, h, "high")
	victims := preempted(h, "low", a.ID)
	if len(victims) != 2 || len(h.LiveAllocs(ns, "low")) != 2 {
		t.Fatalf("preempted %v, low has %d live; want 2 preempted and 2 left", victims, len(h.LiveAllocs(ns, "low")))
	}
	got := slices.Sorted(slices.Values(a.PreemptedAllocations))
	if !slices.Equal(got, victims) {
		t.Errorf("new alloc lists preempted %v, want %v", got, victims)
	}
	for _, v := range h.Allocs(ns, "low") {
		if v.PreemptedByAllocation != "" && (v.DesiredStatus != structs.AllocDesiredStatusStop || !strings.Contains(v.DesiredDescription, `preempted by allocation `+a.ID+` of job "high" (priority 80)`)) {
			t.Errorf("victim %s: %s %q, want stopped with the preemption said", v.ID, v.DesiredStatus, v.DesiredDescription)
		}
		// The client reports the preempted tasks killed: complete.
		if v.PreemptedByAllocation != "" {
			h.SetClientStatus(v.ID, structs.AllocClientStatusComplete)
		}
	}

	// The preemption's evaluation of "low" finds no room: it waits.
	process(t, h, h.NewEval(h.Job(ns, "low"), structs.EvalTriggerPreemption))
	e := lastUpdate(t, h)
	if len(h.LiveAllocs(ns, "low")) != 2 || e.BlockedEval == "" {
		t.Fatalf("low after preemption eval: %d live, blocked %q; want 2 and a blocked eval", len(h.LiveAllocs(ns, "low")), e.BlockedEval)
	}
	// "high" finishes: the blocked eval replaces both victims.
	h.SetClientStatus(a.ID, structs.AllocClientStatusComplete)
	process(t, h, h.Eval(e.BlockedEval))
	if got := len(h.LiveAllocs(ns, "low")); got != 4 {
		t.Errorf("low after room came back: %d live, want 4", got)
	}
}

func TestPreemptFewestVictimsAcrossNodes(t *testing.T) {
	// gpu-1 holds one 2-GPU allocation, gpu-2 two 1-GPU ones (all
	// priority 20): a 2-GPU placement preempts the single one on gpu-1.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	process(t, h, h.RegisterJob(prioJob("pair", 1, 2, 20)))
	h.UpsertNode(schedtest.Node("gpu-2", 2, "", 80))
	process(t, h, h.RegisterJob(prioJob("singles", 2, 1, 20)))
	if len(h.LiveAllocs(ns, "singles")) != 2 || onlyAlloc(t, h, "pair").NodeName != "gpu-1" {
		t.Fatalf("setup: singles %d live, pair on %s", len(h.LiveAllocs(ns, "singles")), onlyAlloc(t, h, "pair").NodeName)
	}

	process(t, h, h.RegisterJob(prioJob("high", 1, 2, 80)))
	a := onlyAlloc(t, h, "high")
	if a.NodeName != "gpu-1" || len(a.PreemptedAllocations) != 1 || len(h.LiveAllocs(ns, "singles")) != 2 {
		t.Errorf("got node %s preempting %v (singles live %d), want gpu-1 preempting only the pair", a.NodeName, a.PreemptedAllocations, len(h.LiveAllocs(ns, "singles")))
	}
}

func TestPreemptRules(t *testing.T) {
	tests := []struct {
		name        string
		lowPrio     int
		preemptible bool
		wantPreempt bool
	}{
		{"priority 20 below 80", 20, true, true},
		{"priority 71 within 10 of 80", 71, true, false},
		{"job not preemptible", 20, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
			low := prioJob("low", 2, 1, tt.lowPrio)
			low.Preemptible = &tt.preemptible
			process(t, h, h.RegisterJob(low))

			process(t, h, h.RegisterJob(prioJob("high", 1, 1, 80)))
			placed := len(h.LiveAllocs(ns, "high")) == 1
			if placed != tt.wantPreempt || len(h.LiveAllocs(ns, "low")) != map[bool]int{true: 1, false: 2}[tt.wantPreempt] {
				t.Errorf("high placed %t, low live %d; want placed %t", placed, len(h.LiveAllocs(ns, "low")), tt.wantPreempt)
			}
			if !tt.wantPreempt {
				if e := lastUpdate(t, h); e.BlockedEval == "" {
					t.Errorf("high not placed but no blocked eval")
				}
			}
		})
	}
}

func TestPreemptionDisabledByConfiguration(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 1, "", 80))
	process(t, h, h.RegisterJob(prioJob("low", 1, 1, 20)))
	cfg := structs.DefaultSchedulerConfiguration()
	cfg.PreemptionConfig.BatchSchedulerEnabled = false
	if err := h.State.SetSchedulerConfig(h.NextIndex(), cfg); err != nil {
		t.Fatalf("set config: %v", err)
	}
	process(t, h, h.RegisterJob(prioJob("high", 1, 1, 80)))
	if len(h.LiveAllocs(ns, "high")) != 0 || len(h.LiveAllocs(ns, "low")) != 1 {
		t.Errorf("with batch preemption off: high %d, low %d live; want 0 and 1", len(h.LiveAllocs(ns, "high")), len(h.LiveAllocs(ns, "low")))
	}
}

func TestGangDropsItsPreemptions(t *testing.T) {
	// A priority-80 gang of 3 on 2 GPUs held at priority 20: preempting
	// both still leaves it one short, so nothing is placed and nothing
	// preempted.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	process(t, h, h.RegisterJob(prioJob("low", 2, 1, 20)))
	job := gangJob("ddp", 3)
	job.Priority = 80
	process(t, h, h.RegisterJob(job))
	if len(h.LiveAllocs(ns, "ddp")) != 0 || len(h.LiveAllocs(ns, "low")) != 2 {
		t.Errorf("gang live %d, low live %d; want 0 and 2 (nothing preempted for a gang that cannot fit)", len(h.LiveAllocs(ns, "ddp")), len(h.LiveAllocs(ns, "low")))
	}
}

func TestPreemptWithinOwnQuota(t *testing.T) {
	// team-a may hold 2 GPUs and holds both, at priority 20, on a full
	// node. Its priority-80 job preempts one of them: the victim's GPU is
	// the quota room the new allocation takes.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	setQuota(t, h, "team-a-gpus", structs.RegionLimit{GPUs: 2})
	low := teamJob("low", 2, 1)
	low.Priority = 20
	process(t, h, h.RegisterJob(low))
	high := teamJob("high", 1, 1)
	high.Priority = 80
	process(t, h, h.RegisterJob(high))
	if got, left := len(h.LiveAllocs(teamA, "high")), len(h.LiveAllocs(teamA, "low")); got != 1 || left != 1 {
		t.Errorf("high %d live, low %d live; want 1 and 1 (one preempted within the quota)", got, left)
	}
}

func TestPreemptingAGangMemberStopsTheGang(t *testing.T) {
	// A priority-20 gang of 2 holds one GPU on each of two nodes; a
	// priority-80 job needs one GPU. Taking one member leaves the gang
	// below its min, so the other stops too instead of idling on its GPU.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 1, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 1, "", 80))
	gang := gangJob("ddp", 2)
	gang.Priority = 20
	process(t, h, h.RegisterJob(gang))
	if n := len(h.LiveAllocs(ns, "ddp")); n != 2 {
		t.Fatalf("setup: gang has %d live, want 2", n)
	}
	process(t, h, h.RegisterJob(prioJob("high", 1, 1, 80)))
	a := onlyAlloc(t, h, "high")
	if got := preempted(h, "ddp", a.ID); len(got) != 2 || len(h.LiveAllocs(ns, "ddp")) != 0 {
		t.Errorf("preempted %v of the gang, %d left live; want both stopped", got, len(h.LiveAllocs(ns, "ddp")))
	}
}

func TestPreemptPrefersLoneAllocationsToGangMembers(t *testing.T) {
	// One node of 2 GPUs: one holds a lone priority-20 allocation, the
	// other a member of a priority-20 gang of 1. The lone one goes.
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 2, "", 80))
	gang := gangJob("ddp", 1)
	gang.Priority = 20
	process(t, h, h.RegisterJob(gang))
	process(t, h, h.RegisterJob(prioJob("lone", 1, 1, 20)))
	process(t, h, h.RegisterJob(prioJob("high", 1, 1, 80)))
	if len(h.LiveAllocs(ns, "ddp")) != 1 || len(h.LiveAllocs(ns, "lone")) != 0 {
		t.Errorf("gang %d live, lone %d live; want the gang kept and the lone allocation preempted", len(h.LiveAllocs(ns, "ddp")), len(h.LiveAllocs(ns, "lone")))
	}
}
