package client

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// fakeClock fires timers only when advanced.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// advance moves the clock and runs the timers due, in order.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

type fakeChecks struct{ healthy, known bool }

func (f *fakeChecks) AllocChecksHealthy(string) (bool, bool) { return f.healthy, f.known }

// deployedAlloc is an allocation of a deployment whose group's update
// strategy is u.
func deployedAlloc(u *structs.UpdateStrategy) *structs.Allocation {
	job := &structs.Job{ID: "web", Type: structs.JobTypeService,
		TaskGroups: []*structs.TaskGroup{{Name: "web", Update: u, Tasks: []*structs.Task{{Name: "t"}}}}}
	return &structs.Allocation{ID: "a1", Job: job, TaskGroup: "web", DeploymentID: "d1",
		DeploymentStatus: &structs.AllocDeploymentStatus{Canary: true}}
}

func taskUpdate(state string, failed bool) *structs.Allocation {
	status := structs.AllocClientStatusRunning
	if failed {
		status = structs.AllocClientStatusFailed
	}
	return &structs.Allocation{ID: "a1", ClientStatus: status,
		TaskStates: map[string]*structs.TaskState{"t": {State: state, Failed: failed}}}
}

// recorder keeps what the tracker emits.
type recorder struct {
	mu  sync.Mutex
	got []*structs.Allocation
}

func (r *recorder) emit(a *structs.Allocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, a)
}

func (r *recorder) last() *structs.Allocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		return nil
	}
	return r.got[len(r.got)-1]
}

func strategy(check string) *structs.UpdateStrategy {
	return &structs.UpdateStrategy{HealthCheck: check, MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute}
}

func TestHealthTrackerHealthyAfterMinHealthyTime(t *testing.T) {
	clock := &fakeClock{now: time.Unix(100, 0)}
	var rec recorder
	h := newHealthTracker(deployedAlloc(strategy(structs.UpdateHealthCheckTaskStates)), clock, nil, rec.emit)
	if out := h.observe(taskUpdate(structs.TaskStatePending, false)); out.DeploymentStatus != nil {
		t.Fatalf("pending task: health %+v, want undecided", out.DeploymentStatus)
	}
	h.observe(taskUpdate(structs.TaskStateRunning, false))
	clock.advance(9 * time.Second)
	if rec.last() != nil {
		t.Fatal("healthy before min_healthy_time")
	}
	clock.advance(time.Second)
	got := rec.last()
	if got == nil || !got.DeploymentStatus.IsHealthy() || !got.DeploymentStatus.IsCanary() || !got.DeploymentStatus.Timestamp.Equal(time.Unix(110, 0)) {
		t.Fatalf("emitted %+v, want healthy canary at 110s", got)
	}
	// Later updates carry the decision; a failure no longer changes it.
	if out := h.observe(taskUpdate(structs.TaskStateDead, true)); !out.DeploymentStatus.IsHealthy() {
		t.Errorf("update after the decision: %+v, want it still healthy", out.DeploymentStatus)
	}
}

func TestHealthTrackerRestartResetsMinHealthyTime(t *testing.T) {
	clock := &fakeClock{now: time.Unix(100, 0)}
	var rec recorder
	h := newHealthTracker(deployedAlloc(strategy(structs.UpdateHealthCheckTaskStates)), clock, nil, rec.emit)
	h.observe(taskUpdate(structs.TaskStateRunning, false))
	clock.advance(5 * time.Second)
	h.observe(taskUpdate(structs.TaskStatePending, false)) // restarting
	h.observe(taskUpdate(structs.TaskStateRunning, false))
	clock.advance(9 * time.Second)
	if rec.last() != nil {
		t.Fatal("healthy although the task restarted within min_healthy_time")
	}
	clock.advance(time.Second)
	if got := rec.last(); got == nil || !got.DeploymentStatus.IsHealthy() {
		t.Fatalf("emitted %+v, want healthy", got)
	}
}

func TestHealthTrackerUnhealthy(t *testing.T) {
	t.Run("task failed", func(t *testing.T) {
		clock := &fakeClock{now: time.Unix(100, 0)}
		var rec recorder
		h := newHealthTracker(deployedAlloc(strategy(structs.UpdateHealthCheckTaskStates)), clock, nil, rec.emit)
		if out := h.observe(taskUpdate(structs.TaskStateDead, true)); !out.DeploymentStatus.IsUnhealthy() {
			t.Errorf("failed task: %+v, want unhealthy", out.DeploymentStatus)
		}
	})
	t.Run("healthy_deadline", func(t *testing.T) {
		clock := &fakeClock{now: time.Unix(100, 0)}
		var rec recorder
		h := newHealthTracker(deployedAlloc(strategy(structs.UpdateHealthCheckTaskStates)), clock, nil, rec.emit)
		h.observe(taskUpdate(structs.TaskStatePending, false))
		clock.advance(time.Minute)
		if got := rec.last(); got == nil || !got.DeploymentStatus.IsUnhealthy() {
			t.Errorf("at the deadline: %+v, want unhealthy", got)
		}
	})
}

func TestHealthTrackerWaitsForChecks(t *testing.T) {
	clock := &fakeClock{now: time.Unix(100, 0)}
	var rec recorder
	checks := &fakeChecks{}
	a := deployedAlloc(strategy(structs.UpdateHealthCheckChecks))
	a.Job.TaskGroups[0].Services = []*structs.Service{{Name: "web", Checks: []*structs.ServiceCheck{{Type: "tcp"}}}}
	h := newHealthTracker(a, clock, checks, rec.emit)
	h.observe(taskUpdate(structs.TaskStateRunning, false))
	clock.advance(10 * time.Second)
	if rec.last() != nil {
		t.Fatal("healthy before its checks ran")
	}
	checks.healthy, checks.known = true, true
	clock.advance(checksRetry)
	if got := rec.last(); got == nil || !got.DeploymentStatus.IsHealthy() {
		t.Fatalf("checks passing: %+v, want healthy", got)
	}
}

// A group without checks is judged by its task states even under
// health_check = "checks" (Nomad's default), or it could never be healthy.
func TestHealthTrackerChecksWithoutChecks(t *testing.T) {
	clock := &fakeClock{now: time.Unix(100, 0)}
	var rec recorder
	checks := &fakeChecks{} // never known: no check runs for the allocation
	h := newHealthTracker(deployedAlloc(strategy(structs.UpdateHealthCheckChecks)), clock, checks, rec.emit)
	h.observe(taskUpdate(structs.TaskStateRunning, false))
	clock.advance(10 * time.Second)
	if got := rec.last(); got == nil || !got.DeploymentStatus.IsHealthy() {
		t.Fatalf("no checks, tasks running past min_healthy_time: %+v, want healthy", got)
	}
}

func TestHealthTrackerNotCreated(t *testing.T) {
	clock := &fakeClock{}
	noDeployment := deployedAlloc(strategy(structs.UpdateHealthCheckTaskStates))
	noDeployment.DeploymentID = ""
	decided := deployedAlloc(strategy(structs.UpdateHealthCheckTaskStates))
	yes := true
	decided.DeploymentStatus.Healthy = &yes
	for name, a := range map[string]*structs.Allocation{
		"no deployment": noDeployment, "decided": decided,
		"manual": deployedAlloc(strategy(structs.UpdateHealthCheckManual)),
	} {
		if h := newHealthTracker(a, clock, nil, func(*structs.Allocation) {}); h != nil {
			t.Errorf("%s: got a tracker, want none", name)
		}
	}
}
