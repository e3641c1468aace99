package client

import (
	"slices"
	"sync"
	"time"

	"github.com/droverhq/drover/structs"
)

// Deployment health: an allocation placed in a deployment is judged by
// its client, once, and the decision rides on its next update
// (Allocation.DeploymentStatus), which the servers count and the
// deployment watcher acts on:
//
//	task updates ──> healthTracker.observe ──> update (+DeploymentStatus once decided)
//	                   │ all tasks running: timer at +min_healthy_time ──> healthy
//	                   │ a task failed:                                ──> unhealthy
//	                   └ start + healthy_deadline, undecided:          ──> unhealthy
//
// With health_check = "checks" the tracker also asks ChecksHealth (the
// service checks, when a helper provides them); without one, "checks"
// judges by task states. health_check = "manual" never decides here.

// ChecksHealth says whether an allocation's service checks pass; known
// is false while they have not run yet.
type ChecksHealth interface {
	AllocChecksHealthy(allocID string) (healthy bool, known bool)
}

// healthClock is the time the tracker waits on (a fake in tests).
type healthClock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// checksRetry is how often a tracker waiting on checks asks again.
const checksRetry = time.Second

// healthTracker decides one allocation's deployment health.
type healthTracker struct {
	allocID  string
	canary   bool
	strategy *structs.UpdateStrategy
	clock    healthClock
	checks   ChecksHealth // nil: judge by task states
	emit     func(*structs.Allocation)

	mu           sync.Mutex
	last         *structs.Allocation // newest update seen
	decided      *structs.AllocDeploymentStatus
	runningSince time.Time
	stopTimer    func() bool
	stopDeadline func() bool
}

// newHealthTracker returns the tracker of a, or nil when a is in no
// deployment, its group has no update strategy, or its health is
// decided already (a restored allocation).
func newHealthTracker(a *structs.Allocation, clock healthClock, checks ChecksHealth, emit func(*structs.Allocation)) *healthTracker {
	if a == nil || a.DeploymentID == "" || a.Job == nil || a.DeploymentStatus.IsHealthy() || a.DeploymentStatus.IsUnhealthy() {
		return nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return nil
	}
	u := tg.Update
	if u == nil {
		u = a.Job.Update
	}
	if u == nil || u.HealthCheck == structs.UpdateHealthCheckManual {
		return nil
	}
	h := &healthTracker{allocID: a.ID, canary: a.DeploymentStatus.IsCanary(), strategy: u, clock: clock, checks: checks, emit: emit}
	if u.HealthCheck != structs.UpdateHealthCheckChecks || !groupHasChecks(tg) {
		h.checks = nil // no checks to wait for: task states decide, as in Nomad
	}
	h.stopDeadline = clock.AfterFunc(u.HealthyDeadline, h.deadline)
	return h
}

// observe follows one update of the allocation and returns it, with the
// decided health once there is one.
func (h *healthTracker) observe(u *structs.Allocation) *structs.Allocation {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = u
	if h.decided == nil {
		h.step(u)
	}
	return h.stamp(u)
}

// stamp returns u with the decided health (a copy), or u.
func (h *healthTracker) stamp(u *structs.Allocation) *structs.Allocation {
	if h.decided == nil || u == nil {
		return u
	}
	c := *u
	c.DeploymentStatus = h.decided.Copy()
	return &c
}

// step moves the tracker on from the task states of u.
func (h *healthTracker) step(u *structs.Allocation) {
	running, failed := taskHealth(u)
	switch {
	case failed:
		h.decideLocked(false)
	case running && h.runningSince.IsZero():
		h.runningSince = h.clock.Now()
		h.scheduleLocked(h.strategy.MinHealthyTime)
	case !running:
		h.runningSince = time.Time{}
		if h.stopTimer != nil {
			h.stopTimer()
			h.stopTimer = nil
		}
	}
}

// taskHealth reports whether the allocation's tasks all run (those that
// ended did so without failing, and one runs at least), and whether one
// failed.
func taskHealth(u *structs.Allocation) (running, failed bool) {
	if u.ClientStatus == structs.AllocClientStatusFailed {
		return false, true
	}
	if len(u.TaskStates) == 0 {
		return false, false
	}
	anyRunning := false
	for _, ts := range u.TaskStates {
		switch {
		case ts == nil:
			return false, false
		case ts.Failed:
			return false, true
		case ts.State == structs.TaskStateRunning:
			anyRunning = true
		case ts.State != structs.TaskStateDead:
			return false, false
		}
	}
	return anyRunning, false
}

func (h *healthTracker) scheduleLocked(d time.Duration) {
	if h.stopTimer != nil {
		h.stopTimer()
	}
	h.stopTimer = h.clock.AfterFunc(d, h.maybeHealthy)
}

// maybeHealthy runs when the tasks have run for min_healthy_time.
func (h *healthTracker) maybeHealthy() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.decided != nil || h.runningSince.IsZero() || h.clock.Now().Before(h.runningSince.Add(h.strategy.MinHealthyTime)) {
		return
	}
	if h.checks != nil {
		healthy, known := h.checks.AllocChecksHealthy(h.allocID)
		if !known || !healthy {
			h.scheduleLocked(checksRetry) // the deadline ends the wait
			return
		}
	}
	h.decideLocked(true)
}

// deadline runs at healthy_deadline: undecided is unhealthy.
func (h *healthTracker) deadline() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.decided == nil {
		h.decideLocked(false)
	}
}

// decideLocked records the health and sends it with the newest update.
func (h *healthTracker) decideLocked(healthy bool) {
	h.decided = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: h.clock.Now().UTC(), Canary: h.canary}
	for _, stop := range []func() bool{h.stopTimer, h.stopDeadline} {
		if stop != nil {
			stop()
		}
	}
	if h.last != nil {
		h.emit(h.stamp(h.last))
	}
}

// stop cancels the tracker's timers (the allocation is gone).
func (h *healthTracker) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, stop := range []func() bool{h.stopTimer, h.stopDeadline} {
		if stop != nil {
			stop()
		}
	}
}

// trackHealth returns the health tracker of a (nil: none) and the
// OnUpdate its alloc runner reports through.
func (c *Client) trackHealth(a *structs.Allocation) (*healthTracker, func(*structs.Allocation)) {
	checks := c.cfg.ChecksHealth
	if checks == nil && c.services != nil {
		checks = c.services // the client's own check runner (services.go)
	}
	h := newHealthTracker(a, realClock{}, checks, c.queueUpdate)
	if h == nil {
		return nil, c.queueUpdate
	}
	return h, func(u *structs.Allocation) { c.queueUpdate(h.observe(u)) }
}

// groupHasChecks reports whether any service of tg or of its tasks has a
// check.
func groupHasChecks(tg *structs.TaskGroup) bool {
	services := slices.Clone(tg.Services)
	for _, t := range tg.Tasks {
		if t != nil {
			services = append(services, t.Services...)
		}
	}
	for _, s := range services {
		if s != nil && len(s.Checks) > 0 {
			return true
		}
	}
	return false
}
