package allocrunner

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// Reasons recorded on Restarting and Not Restarting events.
const (
	ReasonWithinPolicy = "Restart within policy"
	ReasonSuccess      = "Restart unnecessary as task terminated successfully"
	ReasonNoRestarts   = "Policy allows no restarts"
	// ReasonUnrecoverable: the driver refused the task's config, which
	// no restart would change.
	ReasonUnrecoverable = "Error was unrecoverable"
)

// minDelayModeWait is the least a task waits once it has used up its
// attempts in mode "delay".
const minDelayModeWait = time.Second

// restartDecision is what follows a task's exit.
type restartDecision struct {
	restart bool
	delay   time.Duration
	// failed is set when the task will not run again because it failed.
	failed bool
	reason string
}

// restartTracker applies a group's restart policy to a task's exits. It
// is pure: the caller passes the time.
//
// Attempts are counted in a window of Interval that opens at the first
// failure after the previous window closed (an Interval of 0 never
// closes). Within the window the task restarts Attempts times after Delay.
// Beyond that, mode "fail" gives up and mode "delay" waits for the window
// to close and starts a fresh one. A batch task that exits 0 is done; a
// service task that exits 0 is restarted like any other exit, since
// services are meant to keep running. Nomad adds jitter to Delay; Drover
// does not.
type restartTracker struct {
	policy      structs.RestartPolicy
	batch       bool
	count       int
	windowStart time.Time
}

func newRestartTracker(policy *structs.RestartPolicy, jobType string) *restartTracker {
	if policy == nil {
		policy = structs.DefaultRestartPolicy(jobType)
	}
	return &restartTracker{
		policy: *policy,
		batch:  jobType == structs.JobTypeBatch || jobType == structs.JobTypeSysBatch,
	}
}

func (r *restartTracker) next(now time.Time, res *drivers.ExitResult) restartDecision {
	if res != nil && res.Successful() && r.batch {
		return restartDecision{reason: ReasonSuccess}
	}
	p := r.policy
	if r.windowStart.IsZero() || (p.Interval > 0 && now.Sub(r.windowStart) > p.Interval) {
		r.windowStart, r.count = now, 0
	}
	r.count++
	if r.count <= p.Attempts {
		return restartDecision{restart: true, delay: max(p.Delay, 0), reason: ReasonWithinPolicy}
	}
	if p.Attempts == 0 && p.Mode != structs.RestartModeDelay {
		return restartDecision{failed: true, reason: ReasonNoRestarts}
	}
	reason := fmt.Sprintf("Exceeded allowed attempts %d in interval %v and mode is %q", p.Attempts, p.Interval, p.Mode)
	if p.Mode != structs.RestartModeDelay {
		return restartDecision{failed: true, reason: reason}
	}
	delay := p.Delay
	if p.Interval > 0 {
		if untilWindowEnds := r.windowStart.Add(p.Interval).Sub(now); untilWindowEnds > delay {
			delay = untilWindowEnds
		}
	} else {
		// Without a window to wait out and without a delay, a crashing
		// task would be restarted as fast as it can fork, forever.
		delay = max(delay, minDelayModeWait)
	}
	r.windowStart, r.count = time.Time{}, 0
	return restartDecision{restart: true, delay: delay, reason: reason}
}
