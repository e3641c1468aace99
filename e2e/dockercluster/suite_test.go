package dockercluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// scenario sizes one run of the suite.
type scenario struct {
	spec
	jobs, workers int
	pace          time.Duration
	// killClient and restartAll add those faults (long form).
	killClient, restartAll bool
	// settle bounds the wait for every job to reach its count.
	settle time.Duration
}

var (
	shortForm = scenario{
		spec: spec{servers: 3, clients: 2, gpusPerClient: 4, heartbeatTTL: "5s"},
		jobs: 40, workers: 4, pace: 100 * time.Millisecond, settle: 45 * time.Second,
	}
	longForm = scenario{
		spec: spec{servers: 3, clients: 3, gpusPerClient: 4, heartbeatTTL: "5s"},
		jobs: 200, workers: 6, pace: 300 * time.Millisecond, settle: 4 * time.Minute,
		killClient: true, restartAll: true,
	}
)

// maxElection is how long a new leader may take after the old one is
// killed or cut off (the bound).
const maxElection = 10 * time.Second

// TestE2E_DockerCluster runs a workload against servers and clients in
// containers while the leader is killed and partitioned (and, in the long
// form, a client is killed and everything is restarted), then checks that
// nothing acknowledged was lost and no GPU was held twice.
func TestE2E_DockerCluster(t *testing.T) {
	sc, form := shortForm, "short"
	if os.Getenv("DROVER_E2E_LONG") != "" {
		sc, form = longForm, "long"
	}
	start := time.Now()
	c := newCluster(t, sc.spec)
	built := time.Since(start)
	leader, ready := c.waitReady(60 * time.Second)
	ev := &events{start: time.Now()}
	ev.add("image built and %d servers and %d clients started in %s; leader after %s, ACLs bootstrapped and nodes ready after %s",
		len(c.servers), len(c.clients), built.Round(time.Millisecond), leader.Round(time.Millisecond), ready.Round(time.Millisecond))
	token := c.createToken("e2e-workload", `namespace "default" { policy = "write" }`)
	ev.add("workload token created; security on %s: %s", c.servers[0].name, c.checkSecurity(c.servers[0], token))

	w := newWorkload(c, token, sc.jobs, sc.workers)
	w.pace = sc.pace
	k := &checker{c: c}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	workDone := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(workDone)
		w.run(ctx)
	}()
	go func() {
		defer wg.Done()
		k.sampleEvery(ctx, time.Second)
	}()
	stop := func() {
		cancel()
		wg.Wait()
	}
	t.Cleanup(stop)

	total := sc.jobs + sc.jobs/w.updateEvery
	injectFaults(t, c, w, sc, total, ev)
	select {
	case <-workDone:
	case <-time.After(5 * time.Minute):
		t.Fatalf("workload did not finish within 5m of the faults: %d of %d registrations acknowledged", w.acked.Load(), total)
	}
	ev.add("workload done: %d registrations acknowledged, %d attempts, %d answered with an error", w.acked.Load(), w.attempts.Load(), w.failures.Load())
	if sc.restartAll {
		restartAll(t, c, ev)
	}
	r := k.check(w, sc.settle)
	stop()
	restoreIntoFresh(t, c, ev)
	t.Logf("%s form events:\n%s", form, ev)
	t.Logf("checker: %s", r)
	fmt.Printf("drover container cluster (%s form, %d servers, %d clients): checker: %s\n", form, len(c.servers), len(c.clients), r)
	if len(w.given) > 0 {
		t.Logf("registrations never acknowledged (not counted):\n  %s", strings.Join(w.given, "\n  "))
	}
	if f := r.failures(); f != "" {
		t.Errorf("checker found:\n%s%s", f, k.explain(r))
	}
	if r.jobs < sc.jobs*9/10 {
		t.Errorf("only %d of %d jobs were acknowledged: the faults stalled the workload", r.jobs, sc.jobs)
	}
}

// injectFaults kills the leader, then partitions the new one (and in the
// long form kills a client) while the workload runs, each at a share of
// the registrations.
func injectFaults(t *testing.T, c *cluster, w *workload, sc scenario, total int, ev *events) {
	t.Helper()
	waitAcked(t, w, total/5)
	old, _ := c.waitLeader(maxElection)
	c.kill(old)
	ev.add("killed leader %s at %d acknowledged", old.name, w.acked.Load())
	if len(c.servers) > 1 {
		l, took := c.waitLeader(maxElection, old)
		ev.add("new leader %s after %s", l.name, took.Round(time.Millisecond))
	}
	c.start(old)
	ev.add("restarted %s", old.name)

	waitAcked(t, w, total*45/100)
	old, _ = c.waitLeader(maxElection)
	c.partition(old)
	ev.add("partitioned leader %s at %d acknowledged", old.name, w.acked.Load())
	if len(c.servers) > 1 {
		l, took := c.waitLeader(maxElection, old)
		ev.add("new leader %s after %s", l.name, took.Round(time.Millisecond))
	}
	// Keep the partition while the workload goes on without the old
	// leader (a lone server stalls it instead).
	// The target is capped at the workload's end: a fast workload may
	// have acknowledged nearly everything by the time of the partition.
	holdUntil := time.Now().Add(3 * time.Second)
	target := min(w.acked.Load()+int64(total/20), int64(total))
	waitUntil(t, time.Minute, "the partition's hold", func() bool {
		return time.Now().After(holdUntil) && (w.acked.Load()+w.givenUp() >= target || len(c.servers) == 1)
	})
	c.heal(old)
	ev.add("reconnected %s at %d acknowledged", old.name, w.acked.Load())

	if sc.killClient {
		waitAcked(t, w, total*65/100)
		victim := c.clients[len(c.clients)-1]
		c.kill(victim)
		ev.add("killed client %s at %d acknowledged", victim.name, w.acked.Load())
		waitAcked(t, w, total*80/100)
		c.start(victim)
		ev.add("restarted client %s", victim.name)
	}
}

// restartAll kills every container, starts them all again and waits for
// the cluster to be ready.
func restartAll(t *testing.T, c *cluster, ev *events) {
	t.Helper()
	for _, m := range c.members() {
		c.kill(m)
	}
	start := time.Now()
	for _, m := range c.members() {
		c.start(m)
	}
	c.waitReady(90 * time.Second)
	ev.add("killed and restarted all %d containers; ready after %s", len(c.members()), time.Since(start).Round(time.Millisecond))
}

// waitAcked waits until at least n registrations are acknowledged.
func waitAcked(t *testing.T, w *workload, n int) {
	t.Helper()
	waitUntil(t, 3*time.Minute, fmt.Sprintf("%d acknowledged registrations (have %d)", n, w.acked.Load()), func() bool {
		return w.acked.Load() >= int64(n)
	})
}

// events is the timeline the suite prints.
type events struct {
	start time.Time
	mu    sync.Mutex
	lines []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, fmt.Sprintf("%7.1fs  %s", time.Since(e.start).Seconds(), fmt.Sprintf(format, args...)))
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.lines, "\n")
}
