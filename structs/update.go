package structs

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Update health checks: how a deployment judges an allocation healthy
// (Nomad's names; Drover counts an allocation healthy once its client
// reports it running, whatever the value).
const (
	UpdateHealthCheckChecks     = "checks"
	UpdateHealthCheckTaskStates = "task_states"
	UpdateHealthCheckManual     = "manual"
)

// UpdateHealthChecks lists the valid UpdateStrategy.HealthCheck values.
var UpdateHealthChecks = []string{UpdateHealthCheckChecks, UpdateHealthCheckTaskStates, UpdateHealthCheckManual}

// UpdateStrategy says how a job update replaces a group's allocations
// (the jobspec's update block, job or group level). Fields and defaults
// follow Nomad. The scheduler acts on MaxParallel only; the others are
// checked and kept for Nomad compatibility. Batch jobs ignore it.
type UpdateStrategy struct {
	// Stagger is the delay between sets of MaxParallel updates of system
	// jobs.
	Stagger time.Duration
	// MaxParallel is how many allocations of a group are replaced at a
	// time: a replacement must be running before the next one starts.
	// 0 replaces them all at once.
	MaxParallel int
	// HealthCheck is one of UpdateHealthChecks.
	HealthCheck string
	// MinHealthyTime is how long an allocation must be healthy before it
	// counts as such; HealthyDeadline is when it is marked unhealthy if it
	// never was; ProgressDeadline (0: none) is when a deployment without
	// progress fails.
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration
	ProgressDeadline time.Duration
	// AutoRevert rolls a failed deployment back to the last stable version.
	AutoRevert bool
	// Canary is how many allocations of the new version are placed
	// beside the old ones, which stay until the deployment is promoted
	// (by hand, or AutoPromote once all canaries are healthy).
	Canary      int
	AutoPromote bool
}

// DefaultUpdateStrategy returns Nomad's defaults, which a service job
// without an update block gets.
func DefaultUpdateStrategy() *UpdateStrategy {
	return &UpdateStrategy{
		Stagger:          30 * time.Second,
		MaxParallel:      1,
		HealthCheck:      UpdateHealthCheckChecks,
		MinHealthyTime:   10 * time.Second,
		HealthyDeadline:  5 * time.Minute,
		ProgressDeadline: 10 * time.Minute,
	}
}

// Copy returns a copy of u (nil for nil).
func (u *UpdateStrategy) Copy() *UpdateStrategy {
	if u == nil {
		return nil
	}
	c := *u
	return &c
}

// Canonicalize fills the fields whose zero value is invalid (Stagger,
// HealthCheck, HealthyDeadline) from DefaultUpdateStrategy, so a JSON
// job may give only what it changes. MaxParallel, MinHealthyTime and
// ProgressDeadline are meaningful at 0 and left alone.
func (u *UpdateStrategy) Canonicalize() {
	if u == nil {
		return
	}
	d := DefaultUpdateStrategy()
	if u.Stagger == 0 {
		u.Stagger = d.Stagger
	}
	if u.HealthCheck == "" {
		u.HealthCheck = d.HealthCheck
	}
	if u.HealthyDeadline == 0 {
		u.HealthyDeadline = d.HealthyDeadline
	}
}

// Validate reports every problem of a canonicalized u, joined; nil is
// valid (no rolling limit).
func (u *UpdateStrategy) Validate() error {
	if u == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if u.MaxParallel < 0 {
		add("update max_parallel %d must not be negative", u.MaxParallel)
	}
	if u.Canary < 0 {
		add("update canary %d must not be negative", u.Canary)
	}
	if u.AutoPromote && u.Canary == 0 {
		add("update auto_promote needs canary > 0")
	}
	if !slices.Contains(UpdateHealthChecks, u.HealthCheck) {
		add("update health_check %q is not one of checks, task_states, manual", u.HealthCheck)
	}
	if u.Stagger <= 0 {
		add("update stagger %s must be positive", u.Stagger)
	}
	if u.MinHealthyTime < 0 || u.ProgressDeadline < 0 {
		add("update min_healthy_time and progress_deadline must not be negative")
	}
	if u.HealthyDeadline <= 0 {
		add("update healthy_deadline %s must be positive", u.HealthyDeadline)
	}
	if u.MinHealthyTime >= u.HealthyDeadline {
		add("update min_healthy_time %s must be below healthy_deadline %s", u.MinHealthyTime, u.HealthyDeadline)
	}
	if u.ProgressDeadline != 0 && u.HealthyDeadline >= u.ProgressDeadline {
		add("update healthy_deadline %s must be below progress_deadline %s", u.HealthyDeadline, u.ProgressDeadline)
	}
	return errors.Join(errs...)
}

// Rolling reports whether u limits how many allocations are replaced at
// a time.
func (u *UpdateStrategy) Rolling() bool { return u != nil && u.MaxParallel > 0 }

// Warnings returns what the job asks that Drover accepts for Nomad
// compatibility but does not act on yet, one line each: an update block
// with health_check = "manual" (Nomad's alloc health API, which sets it,
// is not Drover's yet: such allocations are never judged healthy, and
// their deployment waits until its progress deadline).
func (j *Job) Warnings() []string {
	if j == nil {
		return nil
	}
	notYet := `update health_check = "manual" is accepted but not acted on yet: nothing marks the allocations healthy, so the deployment fails at its progress deadline`
	manual := func(u *UpdateStrategy) bool { return u != nil && u.HealthCheck == UpdateHealthCheckManual }
	var out []string
	if manual(j.Update) {
		out = append(out, "job "+notYet)
	}
	for _, tg := range j.TaskGroups {
		if tg != nil && manual(tg.Update) && !manual(j.Update) {
			out = append(out, fmt.Sprintf("group %q: %s", tg.Name, notYet))
		}
	}
	out = append(out, j.miscWarnings()...)
	return out
}
