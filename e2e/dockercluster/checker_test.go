package dockercluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// report is what the checker found.
type report struct {
	acknowledged int // acknowledged registrations
	jobs         int // distinct jobs acknowledged
	present      int // of those, present with the acknowledged count
	missing      []string
	doubleHeld   int // GPU instances held by two live allocations, over all samples
	doubleSeen   []string
	samples      int // allocation lists checked for double holds
	atDesired    int // jobs with their count of running or complete allocations
	short        []string
	late         int // jobs whose spec is a failed attempt's, applied after the acknowledged one
	servers      int // servers asked for their own copy of the jobs
	replicated   int // servers whose own state has every acknowledged job
	lagging      []string
}

func (r *report) String() string {
	return fmt.Sprintf("acknowledged %d (%d jobs), present %d/%d (%d superseded by a late unacknowledged attempt), GPU instances double-held %d (over %d samples), jobs at desired count %d/%d, replicated to %d/%d servers",
		r.acknowledged, r.jobs, r.present, r.jobs, r.late, r.doubleHeld, r.samples, r.atDesired, r.jobs, r.replicated, r.servers)
}

// checker reads the cluster through its servers' HTTP APIs.
type checker struct {
	c *cluster

	mu         sync.Mutex
	samples    int
	doubleHeld int
	doubleSeen []string
}

// allocations lists every allocation from a reachable server.
func (k *checker) allocations(ctx context.Context) ([]*structs.AllocListStub, error) {
	var last error
	for _, s := range k.c.servers {
		if !s.reachable() {
			continue
		}
		allocs, _, err := s.api.Allocations().List(ctx, nil)
		if err == nil {
			return allocs, nil
		}
		last = err
	}
	return nil, fmt.Errorf("list allocations: no server answered: %v", last)
}

// live reports whether an allocation holds its resources.
func live(a *structs.AllocListStub) bool {
	return a.DesiredStatus == structs.AllocDesiredStatusRun &&
		(a.ClientStatus == structs.AllocClientStatusPending || a.ClientStatus == structs.AllocClientStatusRunning)
}

// doubleHolds returns the GPU instances (node/GPU) that two live
// allocations hold, with the allocations.
func doubleHolds(allocs []*structs.AllocListStub) []string {
	holder := map[string]*structs.AllocListStub{}
	var out []string
	for _, a := range allocs {
		if !live(a) || a.AllocatedResources == nil {
			continue
		}
		for _, t := range a.AllocatedResources.Tasks {
			for _, d := range t.Devices {
				for _, id := range d.DeviceIDs {
					key := a.NodeName + "/" + id
					if other, ok := holder[key]; ok {
						out = append(out, fmt.Sprintf("%s held by %s and %s", key, describe(other), describe(a)))
						continue
					}
					holder[key] = a
				}
			}
		}
	}
	return out
}

// describe names an allocation with what explains a double hold.
func describe(a *structs.AllocListStub) string {
	return fmt.Sprintf("%s (%s, %s/%s, created %d, modified %d)", a.ID[:8], a.JobID, a.DesiredStatus, a.ClientStatus, a.CreateIndex, a.ModifyIndex)
}

// sample checks one allocation list for double holds; a list no server
// gave is not a sample.
func (k *checker) sample(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	allocs, err := k.allocations(rctx)
	if err != nil {
		return
	}
	doubles := doubleHolds(allocs)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.samples++
	k.doubleHeld += len(doubles)
	for _, d := range doubles {
		k.doubleSeen = append(k.doubleSeen, fmt.Sprintf("sample %d: %s", k.samples, d))
	}
}

// sampleEvery samples until ctx ends.
func (k *checker) sampleEvery(ctx context.Context, d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		k.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// atDesired lists the jobs of want that do not have their count of
// running or complete allocations.
func atDesired(want map[string]int, allocs []*structs.AllocListStub) []string {
	done := map[string]int{}
	for _, a := range allocs {
		if a.ClientStatus == structs.AllocClientStatusComplete || (live(a) && a.ClientStatus == structs.AllocClientStatusRunning) {
			done[a.JobID]++
		}
	}
	var short []string
	for id, n := range want {
		if done[id] < n {
			short = append(short, fmt.Sprintf("%s: %d of %d", id, done[id], n))
		}
	}
	slices.Sort(short)
	return short
}

// check waits up to timeout for every acknowledged job to reach its count,
// then reports presence, double holds (with the samples taken during the
// run) and counts.
func (k *checker) check(w *workload, timeout time.Duration) *report {
	ctx := context.Background()
	allowed := w.expected()
	want := make(map[string]int, len(allowed))
	lowest := make(map[string]int, len(allowed))
	for id, counts := range allowed {
		want[id], lowest[id] = counts[0], slices.Min(counts)
	}
	r := &report{acknowledged: int(w.acked.Load()), jobs: len(want)}
	deadline := time.Now().Add(timeout)
	for {
		k.sample(ctx)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		allocs, err := k.allocations(rctx)
		cancel()
		if err == nil && len(atDesired(lowest, allocs)) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	actual := k.present(ctx, allowed, r)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	allocs, err := k.allocations(rctx)
	cancel()
	if err != nil {
		r.short = []string{err.Error()}
	} else {
		r.short = atDesired(actual, allocs)
	}
	r.atDesired = r.jobs - len(r.short)
	r.servers = len(k.c.servers)
	r.replicated, r.lagging = k.replicas(want)
	k.mu.Lock()
	r.samples, r.doubleHeld, r.doubleSeen = k.samples, k.doubleHeld, k.doubleSeen
	k.mu.Unlock()
	return r
}

// present reads every job of allowed and counts in r those stored with
// an allowed count: the acknowledged one, or (counted in r.late too) one
// of a failed attempt that took effect later. It returns the stored
// counts, which the allocations must reach.
func (k *checker) present(ctx context.Context, allowed map[string][]int, r *report) map[string]int {
	actual := map[string]int{}
	srv := k.c.anyServer()
	if srv == nil {
		r.missing = []string{"no server reachable"}
		return actual
	}
	for id, counts := range allowed {
		job, err := readJob(ctx, srv.api, id)
		if err != nil {
			r.missing = append(r.missing, fmt.Sprintf("%s: %v", id, err))
			continue
		}
		n := job.TaskGroups[0].Count
		actual[id] = n
		switch {
		case n == counts[0]:
			r.present++
		case slices.Contains(counts, n):
			r.present++
			r.late++
		default:
			r.missing = append(r.missing, fmt.Sprintf("%s: count %d, acknowledged %d", id, n, counts[0]))
		}
	}
	slices.Sort(r.missing)
	return actual
}

// replicas asks every server for its own (stale) list of jobs and
// counts those that have every job of want, waiting a little for
// followers that are still catching up.
func (k *checker) replicas(want map[string]int) (int, []string) {
	var lagging []string
	n := 0
	for _, s := range k.c.servers {
		var missing int
		deadline := time.Now().Add(15 * time.Second)
		for {
			missing = k.missingOn(s, want)
			if missing == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if missing == 0 {
			n++
			continue
		}
		lagging = append(lagging, fmt.Sprintf("%s lacks %d jobs", s.name, missing))
	}
	return n, lagging
}

// missingOn counts the jobs of want that s's own state lacks (all of them
// when s does not answer).
func (k *checker) missingOn(s *member, want map[string]int) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	jobs, _, err := s.api.Jobs().List(ctx, &api.QueryOptions{AllowStale: true})
	if err != nil {
		return len(want)
	}
	have := map[string]bool{}
	for _, j := range jobs {
		have[j.ID] = true
	}
	missing := 0
	for id := range want {
		if !have[id] {
			missing++
		}
	}
	return missing
}

// readJob reads a job, retrying a few times across a passing error.
func readJob(ctx context.Context, c *api.Client, id string) (*structs.Job, error) {
	var err error
	for range 5 {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var job *structs.Job
		job, _, err = c.Jobs().Info(rctx, id, nil)
		cancel()
		if err == nil {
			return job, nil
		}
		if api.IsNotFound(err) {
			return nil, err
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil, err
}

// failures describes what the report found wrong, "" when nothing.
func (r *report) failures() string {
	var b strings.Builder
	list := func(what string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s (%d):\n  %s\n", what, len(items), strings.Join(items[:min(len(items), 20)], "\n  "))
	}
	list("acknowledged but missing or changed", r.missing)
	list("GPU instances held twice", r.doubleSeen)
	list("jobs short of their count", r.short)
	list("servers without every job", r.lagging)
	return b.String()
}

// explain describes the evaluations and allocations of the jobs the
// report found short, for the failure message.
func (k *checker) explain(r *report) string {
	srv := k.c.anyServer()
	if srv == nil || len(r.short) == 0 {
		return ""
	}
	ctx := context.Background()
	var b strings.Builder
	for _, line := range r.short[:min(len(r.short), 5)] {
		id, _, _ := strings.Cut(line, ":")
		fmt.Fprintf(&b, "%s:\n", id)
		evals, _, err := srv.api.Jobs().Evaluations(ctx, id, nil)
		if err != nil {
			fmt.Fprintf(&b, "  evaluations: %v\n", err)
		}
		for _, e := range evals {
			fmt.Fprintf(&b, "  eval %s %s %s by %s (%s) create=%d modify=%d\n", e.ID[:8], e.Type, e.Status, e.TriggeredBy, e.StatusDescription, e.CreateIndex, e.ModifyIndex)
		}
		allocs, _, err := srv.api.Jobs().Allocations(ctx, id, nil)
		if err != nil {
			fmt.Fprintf(&b, "  allocations: %v\n", err)
		}
		for _, a := range allocs {
			fmt.Fprintf(&b, "  alloc %s on %s desired=%s client=%s (%s)\n", a.ID[:8], a.NodeName, a.DesiredStatus, a.ClientStatus, a.ClientDescription)
		}
	}
	return b.String()
}
