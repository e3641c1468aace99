package dockercluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// workload registers jobs concurrently through the servers' HTTP APIs
// while faults happen, retrying each registration until a server answers
// 2xx, and records what was acknowledged.
type workload struct {
	c *cluster
	// apis are the servers' clients with the workload's token, one per
	// server in c.servers' order.
	apis    []*api.Client
	jobs    int           // distinct jobs
	workers int           // concurrent registrations
	pace    time.Duration // pause between two registrations of a worker
	// updateEvery: every updateEvery-th job is registered again with one
	// more allocation once its first registration is acknowledged.
	updateEvery int
	// giveUp bounds the retries of one registration.
	giveUp time.Duration

	acked    atomic.Int64 // acknowledged registrations
	attempts atomic.Int64
	failures atomic.Int64 // attempts answered with an error
	mu       sync.Mutex
	want     map[string]int // job ID -> group count of its last acknowledged registration
	// unanswered holds, per job, the counts of attempts that failed: an
	// attempt without a success answer may still take effect, even after
	// a later acknowledged one (a request held in a partitioned server's
	// TCP buffers is delivered when the partition heals).
	unanswered map[string]map[int]bool
	given      []string // registrations that were never acknowledged
}

// newWorkload returns a workload that registers jobs with token.
func newWorkload(c *cluster, token string, jobs, workers int) *workload {
	w := &workload{
		c: c, jobs: jobs, workers: workers, pace: 50 * time.Millisecond, updateEvery: 10,
		giveUp: 2 * time.Minute, want: map[string]int{}, unanswered: map[string]map[int]bool{},
	}
	for _, s := range c.servers {
		w.apis = append(w.apis, c.apiClient(s, token))
	}
	return w
}

// run registers every job, spread over the workers, and returns when all
// are done or ctx ends.
func (w *workload) run(ctx context.Context) {
	next := make(chan int)
	var wg sync.WaitGroup
	for i := range w.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				w.registerJob(ctx, i, n)
			}
		}()
	}
	defer wg.Wait()
	defer close(next)
	for n := range w.jobs {
		select {
		case next <- n:
		case <-ctx.Done():
			return
		}
	}
}

// jobID names the workload's n-th job.
func jobID(n int) string { return fmt.Sprintf("wl-%03d", n) }

// workloadJob is the n-th job with count allocations: a batch job whose
// task sleeps a little while holding one simulated GPU.
func workloadJob(n, count int) *structs.Job {
	sleep := fmt.Sprintf("%dms", 500+(n%5)*300)
	return &structs.Job{
		ID: jobID(n), Name: jobID(n), Type: structs.JobTypeBatch, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "work", Count: count, Tasks: []*structs.Task{{
			Name: "sleep", Driver: "raw_exec",
			Config: map[string]any{"command": "/bin/sleep", "args": []string{sleep}},
			Resources: &structs.Resources{CPU: 50, MemoryMB: 16,
				Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}},
		}}}},
	}
}

// registerJob registers job n, and for every updateEvery-th job, an
// update of it with one more allocation.
func (w *workload) registerJob(ctx context.Context, worker, n int) {
	counts := []int{1}
	if n%w.updateEvery == w.updateEvery-1 {
		counts = append(counts, 2)
	}
	for _, count := range counts {
		if !w.register(ctx, worker, workloadJob(n, count)) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.pace):
		}
	}
}

// register sends job to the servers in turn until one acknowledges it,
// giveUp passes or ctx ends; it reports whether it was acknowledged.
func (w *workload) register(ctx context.Context, worker int, job *structs.Job) bool {
	deadline := time.Now().Add(w.giveUp)
	count := job.TaskGroups[0].Count
	for try := 0; ; try++ {
		srv := w.apis[(worker+try)%len(w.apis)]
		w.attempts.Add(1)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _, err := srv.Jobs().Register(rctx, job, nil)
		cancel()
		if err == nil {
			w.mu.Lock()
			w.want[job.ID] = count
			w.mu.Unlock()
			w.acked.Add(1)
			return true
		}
		w.failures.Add(1)
		w.mu.Lock()
		if w.unanswered[job.ID] == nil {
			w.unanswered[job.ID] = map[int]bool{}
		}
		w.unanswered[job.ID][count] = true
		w.mu.Unlock()
		if ctx.Err() != nil || time.Now().After(deadline) {
			w.mu.Lock()
			w.given = append(w.given, fmt.Sprintf("%s count=%d: %v", job.ID, count, err))
			w.mu.Unlock()
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// givenUp counts the registrations the workload stopped trying.
func (w *workload) givenUp() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(len(w.given))
}

// expected returns, per acknowledged job, the counts its stored spec may
// have: the last acknowledged one first, then those of failed attempts.
func (w *workload) expected() map[string][]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string][]int, len(w.want))
	for id, n := range w.want {
		allowed := []int{n}
		for c := range w.unanswered[id] {
			if c != n {
				allowed = append(allowed, c)
			}
		}
		out[id] = allowed
	}
	return out
}
