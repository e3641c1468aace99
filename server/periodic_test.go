package server

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// fakeClock is a PeriodicClock that moves only when told.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) At(at time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !at.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: at, ch: ch})
	return ch
}

// Advance moves the clock by d and fires the timers it passes.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

func periodicJob(id, cron, tz string, overlap bool) *structs.Job {
	job := gpuJob(id, structs.JobTypeBatch, 1, 0)
	job.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: cron, TimeZone: tz, ProhibitOverlap: overlap}
	job.Canonicalize()
	return job
}

func TestPeriodicNextAcrossTimeZones(t *testing.T) {
	tests := []struct {
		name, spec, tz string
		from, want     string
	}{
		{"utc daily", "0 9 * * *", "UTC", "2026-11-26T10:00:00Z", "2026-11-27T09:00:00Z"},
		{"new york winter", "0 9 * * *", "America/New_York", "2026-11-26T00:00:00Z", "2026-11-26T14:00:00Z"},
		{"new york summer", "0 9 * * *", "America/New_York", "2026-07-01T00:00:00Z", "2026-07-01T13:00:00Z"},
		{"tokyo", "30 8 * * *", "Asia/Tokyo", "2026-11-26T00:00:00Z", "2026-11-26T23:30:00Z"},
		{"seconds", "*/2 * * * * * *", "UTC", "2026-11-26T00:00:01Z", "2026-11-26T00:00:02Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &structs.PeriodicConfig{Enabled: true, Spec: tt.spec, TimeZone: tt.tz}
			p.Canonicalize()
			from, _ := time.Parse(time.RFC3339, tt.from)
			got, err := p.Next(from)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := time.Parse(time.RFC3339, tt.want); !got.Equal(want) {
				t.Errorf("Next(%s) = %s, want %s", tt.from, got.UTC(), tt.want)
			}
		})
	}
}

func TestPeriodicTrackerStep(t *testing.T) {
	start := time.Date(2026, 11, 26, 10, 0, 30, 0, time.UTC)
	job := periodicJob("p", "* * * * *", "UTC", false) // every minute
	job.SubmitTime = start.UnixNano()
	job.JobModifyIndex = 5
	none := func(*structs.Job) time.Time { return time.Time{} }

	tr := newPeriodicTracker()
	due, wake := tr.step([]*structs.Job{job}, none, start)
	if len(due) != 0 || !wake.Equal(start.Truncate(time.Minute).Add(time.Minute)) {
		t.Fatalf("at submit: due %v, wake %s; want nothing due, wake at the next minute", due, wake)
	}
	due, _ = tr.step([]*structs.Job{job}, none, wake)
	if len(due) != 1 || !due[0].launch.Equal(wake) {
		t.Fatalf("at the minute: due %v, want one launch at %s", due, wake)
	}
	if due, _ = tr.step([]*structs.Job{job}, none, wake); len(due) != 0 {
		t.Fatalf("same minute again: due %v, want none (launched once)", due)
	}

	// A new leader's tracker resumes from the last child in state: the
	// launch the old leader made is not made again, a missed one is made
	// once.
	last := func(*structs.Job) time.Time { return wake }
	fresh := newPeriodicTracker()
	if due, _ := fresh.step([]*structs.Job{job}, last, wake.Add(10*time.Second)); len(due) != 0 {
		t.Fatalf("new leader right after a launch: due %v, want none", due)
	}
	fresh = newPeriodicTracker()
	due, wake2 := fresh.step([]*structs.Job{job}, last, wake.Add(150*time.Second))
	if len(due) != 1 || !due[0].launch.Equal(wake.Add(time.Minute)) {
		t.Fatalf("new leader after missing launches: due %v, want the first missed one once", due)
	}
	if !wake2.After(wake.Add(150 * time.Second)) {
		t.Errorf("wake %s is not after now", wake2)
	}

	// A "launch" in the future (a hand-made child ID) is ignored.
	future := func(*structs.Job) time.Time { return wake.Add(24 * time.Hour) }
	fresh = newPeriodicTracker()
	if _, w := fresh.step([]*structs.Job{job}, future, wake.Add(10*time.Second)); !w.Equal(wake.Add(time.Minute)) {
		t.Errorf("with a future child: wake %s, want the next minute %s", w, wake.Add(time.Minute))
	}

	// Disabled, stopped or removed parents are dropped.
	off := job.Copy()
	off.Periodic.Enabled = false
	if due, wake := tr.step([]*structs.Job{off}, none, wake.Add(time.Hour)); len(due) != 0 || !wake.IsZero() || len(tr.entries) != 0 {
		t.Errorf("disabled: due %v, wake %s, tracked %d; want nothing", due, wake, len(tr.entries))
	}
}

// periodicServer starts a lone server on a fake periodic clock.
func periodicServer(t *testing.T, now time.Time) (*Server, *fakeClock) {
	t.Helper()
	clock := newFakeClock(now)
	cfg := testConfig(t)
	cfg.PeriodicClock = clock
	return startServer(t, cfg), clock
}

func periodicChildIDs(t *testing.T, s *Server, parent string) []string {
	t.Helper()
	p, err := s.State().JobByID(nil, structs.DefaultNamespace, parent)
	if err != nil || p == nil {
		t.Fatalf("parent %q: %v", parent, err)
	}
	children, err := s.periodicChildren(p)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range children {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestPeriodicDispatcherLaunches: a registered periodic parent gets no
// evaluation and is running; each launch time registers a child with an
// evaluation; with prohibit_overlap a launch is skipped while the
// previous child is not dead (no node here: children stay pending).
func TestPeriodicDispatcherLaunches(t *testing.T) {
	t.Parallel()
	start := time.Now().Truncate(time.Minute).Add(10 * time.Second)
	s, clock := periodicServer(t, start)
	job := periodicJob("nightly", "* * * * *", "UTC", true)
	job.SubmitTime = start.UnixNano() // on the fake clock, as the server would set it on the wall clock
	resp := registerJob(t, s, job)
	if resp.EvalID != "" {
		t.Fatalf("register periodic parent: eval %q, want none", resp.EvalID)
	}
	evals, _ := s.State().EvalsByJob(nil, structs.DefaultNamespace, "nightly")
	if len(evals) != 0 {
		t.Fatalf("parent has %d evals, want 0", len(evals))
	}
	if got := storedJob(t, s, "nightly").Status; got != structs.JobStatusRunning {
		t.Errorf("parent status %q, want running", got)
	}

	clock.Advance(time.Minute)
	want := structs.PeriodicChildID("nightly", start.Truncate(time.Minute).Add(time.Minute))
	waitFor(t, 10*time.Second, func() (bool, string) {
		ids := periodicChildIDs(t, s, "nightly")
		return len(ids) == 1 && ids[0] == want, "children " + strings.Join(ids, ",") + ", want " + want
	})
	child := storedJob(t, s, want)
	if child.ParentID != "nightly" || child.Periodic != nil {
		t.Errorf("child parent %q periodic %v, want nightly and nil", child.ParentID, child.Periodic)
	}
	if ev, _ := s.State().EvalsByJob(nil, structs.DefaultNamespace, want); len(ev) == 0 { // plus a blocked one: no nodes
		t.Errorf("child has no evals, want its registration eval")
	}

	// prohibit_overlap: the child is pending (no nodes), so a launch due
	// now is skipped.
	s.maybeLaunchPeriodic(periodicLaunch{job: storedJob(t, s, "nightly"), launch: start.Add(time.Hour)})
	if ids := periodicChildIDs(t, s, "nightly"); len(ids) != 1 {
		t.Fatalf("with overlap prohibited and a pending child: children %v, want 1", ids)
	}

	// Force launches regardless.
	var force structs.PeriodicForceResponse
	if err := s.RPC(structs.RPCPeriodicForce, &structs.PeriodicForceRequest{JobID: "nightly"}, &force); err != nil {
		t.Fatalf("Periodic.Force: %v", err)
	}
	if force.EvalID == "" || force.Index == 0 {
		t.Errorf("force = %+v, want an eval and an index", force)
	}
	if ids := periodicChildIDs(t, s, "nightly"); len(ids) != 2 {
		t.Errorf("after force: children %v, want 2", ids)
	}
	// The same second again is the same child: refused, not doubled.
	err := s.RPC(structs.RPCPeriodicForce, &structs.PeriodicForceRequest{JobID: "nightly"}, &force)
	if !errors.Is(err, structs.ErrConflict) {
		t.Errorf("second force in the same second: %v, want conflict", err)
	}
}

// TestPeriodicLaunchOnceAcrossLeaders: a launch already in state (made
// by a previous leader) is refused by the FSM's check-and-set.
func TestPeriodicLaunchOnceAcrossLeaders(t *testing.T) {
	t.Parallel()
	start := time.Now().Truncate(time.Minute).Add(10 * time.Second)
	s, _ := periodicServer(t, start)
	job := periodicJob("hourly", "0 * * * *", "UTC", false)
	registerJob(t, s, job)
	parent := storedJob(t, s, "hourly")
	launch := start.Truncate(time.Hour)
	if _, err := s.launchPeriodic(parent, launch); err != nil {
		t.Fatal(err)
	}
	if _, err := s.launchPeriodic(parent, launch); !errors.Is(err, structs.ErrConflict) {
		t.Fatalf("second launch of %s: %v, want conflict", launch, err)
	}
	if got := s.lastPeriodicLaunch(parent); !got.Equal(launch) {
		t.Errorf("last launch %s, want %s", got, launch)
	}
	// The record outlives the children (garbage collected, say).
	purge := &structs.JobDeregisterRequest{JobID: structs.PeriodicChildID("hourly", launch), Purge: true}
	if err := s.RPC(structs.RPCJobDeregister, purge, &structs.JobDeregisterResponse{}); err != nil {
		t.Fatal(err)
	}
	if ids := periodicChildIDs(t, s, "hourly"); len(ids) != 0 {
		t.Fatalf("children after purge: %v", ids)
	}
	if got := s.lastPeriodicLaunch(parent); !got.Equal(launch) {
		t.Errorf("last launch without children %s, want %s (from periodic_launch)", got, launch)
	}
}

func TestPeriodicForceErrors(t *testing.T) {
	t.Parallel()
	s, _ := periodicServer(t, time.Now())
	registerJob(t, s, gpuJob("plain", structs.JobTypeBatch, 1, 0))
	tests := []struct {
		id   string
		want error
	}{
		{"", structs.ErrInvalid},
		{"nope", structs.ErrNotFound},
		{"plain", structs.ErrInvalid},
	}
	for _, tt := range tests {
		err := s.RPC(structs.RPCPeriodicForce, &structs.PeriodicForceRequest{JobID: tt.id}, &structs.PeriodicForceResponse{})
		if !errors.Is(err, tt.want) {
			t.Errorf("force %q: %v, want %v", tt.id, err, tt.want)
		}
	}
}

// TestPeriodicLeaderFailover: a new leader resumes the schedule from the
// launches in state: no launch is made twice, the next one is made.
func TestPeriodicLeaderFailover(t *testing.T) {
	t.Parallel()
	start := time.Now().Truncate(time.Minute).Add(10 * time.Second)
	clock := newFakeClock(start)
	c := newTestCluster(t, 3, withServerConfig(func(_ int, cfg *Config) { cfg.PeriodicClock = clock }))
	leader := c.Leader()
	job := periodicJob("failover", "* * * * *", "UTC", false)
	job.SubmitTime = start.UnixNano()
	registerJob(t, leader, job)
	t1 := start.Truncate(time.Minute).Add(time.Minute)
	t2 := t1.Add(time.Minute)

	clock.Advance(time.Minute)
	waitFor(t, 10*time.Second, func() (bool, string) {
		ids := periodicChildIDs(t, leader, "failover")
		return len(ids) == 1, "children " + strings.Join(ids, ",")
	})
	c.Kill(c.Index(leader))
	next := c.WaitForLeader(clusterFormTimeout)
	waitFor(t, 10*time.Second, func() (bool, string) { return next.leading(), "new leader not ready" })

	clock.Advance(time.Minute)
	want := structs.PeriodicChildID("failover", t1) + "," + structs.PeriodicChildID("failover", t2)
	waitFor(t, 10*time.Second, func() (bool, string) {
		got := strings.Join(periodicChildIDs(t, next, "failover"), ",")
		return got == want, "children " + got + ", want " + want
	})
	waitFor(t, 10*time.Second, func() (bool, string) {
		l, _ := next.State().PeriodicLaunchByID(nil, structs.DefaultNamespace, "failover")
		return l != nil && l.Launch.Equal(t2), fmt.Sprintf("recorded launch %+v, want %s", l, t2)
	})
}
