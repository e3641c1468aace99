package scheduler_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// queueHarness is a cluster of 2 nodes of 4 GPUs with the given queues.
func queueHarness(t *testing.T, queues ...*structs.Queue) *schedtest.Harness {
	t.Helper()
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("gpu-1", 4, "", 80))
	h.UpsertNode(schedtest.Node("gpu-2", 4, "", 80))
	for _, q := range queues {
		if err := h.State.UpsertQueue(h.NextIndex(), q); err != nil {
			t.Fatalf("upsert queue %s: %v", q.Name, err)
		}
	}
	return h
}

// submitToQueue registers a single-GPU batch job in queue and processes
// its evaluation.
func submitToQueue(t *testing.T, h *schedtest.Harness, id, queue string) {
	t.Helper()
	job := schedtest.GPUJob(id, 1, 1)
	job.Queue = queue
	process(t, h, h.RegisterJob(job))
}

// held counts the GPUs the live allocations of each queue's jobs hold.
func held(h *schedtest.Harness, jobs map[string]string) map[string]int {
	out := map[string]int{}
	for id, queue := range jobs {
		out[queue] += len(h.LiveAllocs(ns, id))
	}
	return out
}

// retryBlocked processes every blocked evaluation, oldest first, as the
// broker would after capacity frees.
func retryBlocked(t *testing.T, h *schedtest.Harness) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range append(h.CreatedEvals(), h.ReblockedEvals()...) {
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		if stored := h.Eval(e.ID); stored != nil && stored.Status == structs.EvalStatusBlocked {
			process(t, h, stored)
		}
	}
}

// completeOne marks the oldest live allocation of queue's jobs complete.
func completeOne(t *testing.T, h *schedtest.Harness, jobs map[string]string, order []string, queue string) {
	t.Helper()
	for _, id := range order {
		if jobs[id] != queue {
			continue
		}
		if live := h.LiveAllocs(ns, id); len(live) > 0 {
			h.SetClientStatus(live[0].ID, structs.AllocClientStatusComplete)
			return
		}
	}
	t.Fatalf("queue %s has nothing running to complete", queue)
}

func TestQueuesShareByWeight(t *testing.T) {
	// Two queues of equal weight submit 40 single-GPU jobs each onto 8
	// GPUs: each holds 4 while both have work waiting, as jobs finish.
	h := queueHarness(t, &structs.Queue{Name: "a", Weight: 1}, &structs.Queue{Name: "b", Weight: 1})
	jobs := map[string]string{}
	var order []string
	for i := range 40 {
		for _, q := range []string{"a", "b"} {
			id := fmt.Sprintf("%s-%d", q, i)
			jobs[id] = q
			order = append(order, id)
			submitToQueue(t, h, id, q)
		}
	}
	check := func(when string) {
		t.Helper()
		got := held(h, jobs)
		if got["a"]+got["b"] != 8 || got["a"] < 3 || got["a"] > 5 {
			t.Fatalf("%s: GPUs held %v, want 4 each (±1) of 8", when, got)
		}
	}
	check("after submission")
	for round := range 30 {
		q := []string{"a", "b"}[round%3%2] // finish a, b, a, a, b, a, ...
		completeOne(t, h, jobs, order, q)
		retryBlocked(t, h)
		check(fmt.Sprintf("round %d (a %s job finished)", round, q))
	}
}

func TestQueueLendsIdleShareAndTakesItBack(t *testing.T) {
	// "a" alone takes all 8 GPUs; "b" arrives and, as a's jobs finish,
	// gets the GPUs until both hold 4.
	h := queueHarness(t, &structs.Queue{Name: "a", Weight: 1}, &structs.Queue{Name: "b", Weight: 1})
	jobs := map[string]string{}
	var order []string
	for i := range 16 {
		id := fmt.Sprintf("a-%d", i)
		jobs[id], order = "a", append(order, id)
		submitToQueue(t, h, id, "a")
	}
	if got := held(h, jobs); got["a"] != 8 {
		t.Fatalf("a alone holds %d GPUs, want all 8 (idle share is lent)", got["a"])
	}
	for i := range 16 {
		id := fmt.Sprintf("b-%d", i)
		jobs[id], order = "b", append(order, id)
		submitToQueue(t, h, id, "b")
	}
	for range 4 {
		completeOne(t, h, jobs, order, "a")
		retryBlocked(t, h)
	}
	got := held(h, jobs)
	if got["a"] != 4 || got["b"] != 4 {
		t.Fatalf("after 4 of a's jobs finished: %v, want 4 each", got)
	}
	// One more of a's finishes: a is below its share again and gets it.
	completeOne(t, h, jobs, order, "a")
	retryBlocked(t, h)
	if got := held(h, jobs); got["a"] != 4 || got["b"] != 4 {
		t.Errorf("after a fifth finished: %v, want 4 each", got)
	}
	// While b waited below its share, a's waiting jobs said why they
	// were held back though a GPU was free.
	reason := ""
	for _, e := range h.ReblockedEvals() {
		if m := e.FailedTGAllocs[schedtest.GPUGroup]; jobs[e.JobID] == "a" && m != nil && m.Queue != "" {
			reason = m.Queue
		}
	}
	if !strings.HasPrefix(reason, `queue "a" holds `) || !strings.HasSuffix(reason, `GPUs, its fair share is 4, and queue "b" waits below its own`) {
		t.Errorf("a's fair-share reason = %q, want a at or over its share of 4 while b waits", reason)
	}
}

func TestQueueMaxGPUs(t *testing.T) {
	h := queueHarness(t, &structs.Queue{Name: "capped", Weight: 1, MaxGPUs: 2})
	for i := range 3 {
		submitToQueue(t, h, fmt.Sprintf("c-%d", i), "capped")
	}
	if got := held(h, map[string]string{"c-0": "capped", "c-1": "capped", "c-2": "capped"}); got["capped"] != 2 {
		t.Fatalf("capped queue holds %d GPUs, want its maximum 2", got["capped"])
	}
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.GPUGroup]
	if m == nil || !strings.Contains(m.Queue, `queue "capped" is at its maximum of 2 GPUs`) {
		t.Errorf("third job's metric = %+v, want the maximum named", m)
	}
}

func TestQueueReclaimsGuaranteedGPUs(t *testing.T) {
	// "borrower" fills all 8 GPUs while "owner", guaranteed 4, is idle;
	// owner's jobs then preempt borrower's allocations (same priority)
	// until it holds its 4, and no further.
	h := queueHarness(t, &structs.Queue{Name: "owner", Weight: 1, GuaranteedGPUs: 4}, &structs.Queue{Name: "borrower", Weight: 1})
	jobs := map[string]string{}
	for i := range 8 {
		id := fmt.Sprintf("borrow-%d", i)
		jobs[id] = "borrower"
		submitToQueue(t, h, id, "borrower")
	}
	if got := held(h, jobs); got["borrower"] != 8 {
		t.Fatalf("borrower holds %d GPUs, want all 8 while owner is idle", got["borrower"])
	}
	for i := range 6 {
		id := fmt.Sprintf("own-%d", i)
		jobs[id] = "owner"
		submitToQueue(t, h, id, "owner")
	}
	if got := held(h, jobs); got["owner"] != 4 || got["borrower"] != 4 {
		t.Errorf("after owner asked: %v, want owner 4 (its guarantee, reclaimed) and borrower 4", got)
	}
	preempted := 0
	for id, q := range jobs {
		for _, a := range h.Allocs(ns, id) {
			if a.PreemptedByAllocation != "" && q == "borrower" {
				preempted++
			}
		}
	}
	if preempted != 4 {
		t.Errorf("borrower allocations preempted: %d, want 4", preempted)
	}
}

func TestQueueReclaimLeavesOthersTheirGuarantee(t *testing.T) {
	// b (guaranteed 2) holds 3, c (nothing guaranteed) holds 5: all 8
	// GPUs. a, guaranteed 4, takes back 4, from what b and c borrowed,
	// never leaving b under its own 2.
	h := queueHarness(t,
		&structs.Queue{Name: "a", Weight: 1, GuaranteedGPUs: 4},
		&structs.Queue{Name: "b", Weight: 1, GuaranteedGPUs: 2},
		&structs.Queue{Name: "c", Weight: 1})
	jobs := map[string]string{}
	for q, n := range map[string]int{"b": 3, "c": 5} {
		for i := range n {
			id := fmt.Sprintf("%s-%d", q, i)
			jobs[id] = q
			submitToQueue(t, h, id, q)
		}
	}
	for i := range 4 {
		id := fmt.Sprintf("a-%d", i)
		jobs[id] = "a"
		submitToQueue(t, h, id, "a")
	}
	got := held(h, jobs)
	if got["a"] != 4 || got["b"] < 2 || got["a"]+got["b"]+got["c"] != 8 {
		t.Errorf("after a reclaimed: %v, want a 4 and b at least its guaranteed 2", got)
	}
}
