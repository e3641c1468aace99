package scheduler

import (
	"slices"
	"time"

	"github.com/droverhq/drover/structs"
)

// ReschedulePolicy says when an allocation that failed is replaced on the
// servers' side (its client already restarted it in place as the
// group's restart policy allows). A group's structs.ReschedulePolicy is
// used when set; groups without one get DefaultReschedulePolicy of their
// job's type (or the one set WithReschedulePolicy).
type ReschedulePolicy struct {
	// Attempts is how many failures of one allocation name within Interval
	// are replaced; a name that failed more often is left failed. Ignored
	// when Unlimited.
	Attempts  int
	Unlimited bool
	// Interval is the window failures are counted in, for Attempts and
	// for the delay's growth (0: every failure counts).
	Interval time.Duration
	// Delay is how long after a failure its replacement is placed.
	// DelayFunction says how it grows with every other recent failure of
	// the name: constant, exponential (doubling) or fibonacci, up to
	// MaxDelay. Empty means exponential when MaxDelay is above Delay,
	// else constant.
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
}

// DefaultReschedulePolicy returns Nomad's default policy for jobType:
// a batch allocation is replaced once in 24 hours, 5 seconds after it
// failed; a service allocation always, 30 seconds after its first recent
// failure, the delay doubling up to an hour.
func DefaultReschedulePolicy(jobType string) ReschedulePolicy {
	return policyFrom(structs.DefaultReschedulePolicy(jobType))
}

func policyFrom(p *structs.ReschedulePolicy) ReschedulePolicy {
	return ReschedulePolicy{
		Attempts: p.Attempts, Unlimited: p.Unlimited, Interval: p.Interval,
		Delay: p.Delay, DelayFunction: p.DelayFunction, MaxDelay: p.MaxDelay,
	}
}

// policyFor returns the policy for tg: its own when set, else fallback.
func policyFor(tg *structs.TaskGroup, fallback ReschedulePolicy) ReschedulePolicy {
	if tg == nil || tg.ReschedulePolicy == nil {
		return fallback
	}
	return policyFrom(tg.ReschedulePolicy)
}

// WithReschedulePolicy replaces the policy for jobs of jobType (tests use
// short delays).
func WithReschedulePolicy(jobType string, p ReschedulePolicy) Option {
	return func(c *config) {
		if c.reschedule == nil {
			c.reschedule = map[string]ReschedulePolicy{}
		}
		c.reschedule[jobType] = p
	}
}

// due returns when an allocation name that failed at the given times
// (oldest first) may be placed again, or false when it must not be.
func (p ReschedulePolicy) due(failures []time.Time, now time.Time) (time.Time, bool) {
	if len(failures) == 0 {
		return now, true
	}
	recent := 0
	for _, f := range failures {
		if p.Interval <= 0 || now.Sub(f) < p.Interval {
			recent++
		}
	}
	if !p.Unlimited && recent > p.Attempts {
		return time.Time{}, false
	}
	return failures[len(failures)-1].Add(p.delay(recent)), true
}

// delay returns the wait after the recent-th failure within the interval
// (1 for the first).
func (p ReschedulePolicy) delay(recent int) time.Duration {
	fn := p.DelayFunction
	if fn == "" {
		fn = structs.DelayFunctionConstant
		if p.MaxDelay > p.Delay {
			fn = structs.DelayFunctionExponential
		}
	}
	if fn == structs.DelayFunctionConstant || p.MaxDelay <= p.Delay {
		return p.Delay
	}
	// prev and cur walk the sequence (exponential: d, 2d, 4d, ...;
	// fibonacci: d, d, 2d, 3d, 5d, ...) until the cap.
	prev, cur := time.Duration(0), p.Delay
	for i := 1; i < recent && cur < p.MaxDelay; i++ {
		if fn == structs.DelayFunctionFibonacci {
			if prev == 0 {
				prev = p.Delay
				continue
			}
			prev, cur = cur, prev+cur
			continue
		}
		cur *= 2
	}
	return min(cur, p.MaxDelay)
}

// rescheduling is what the policy made of a reconciliation's placements.
type rescheduling struct {
	place []placement // to place now
	// retryAt is when the earliest delayed placement becomes due; zero
	// when none waits.
	retryAt time.Time
	gaveUp  []string // names left failed, their attempts used up
}

// limitReschedules applies each placement's group policy (policyFor with
// fallback) to placements. A placement whose name
// has failed allocations that ran the group's current spec is a
// reschedule: it waits until the policy's delay has passed since the last
// failure, and is dropped once the name used up its attempts. Failure
// times are the allocations' ModifyTime, which the servers stamp when the
// client reports. Other placements pass through. It is pure.
func limitReschedules(fallback ReschedulePolicy, job *structs.Job, allocs []*structs.Allocation, place []placement, now time.Time) rescheduling {
	var r rescheduling
	if len(place) == 0 {
		return r
	}
	failures := map[string][]time.Time{}
	for _, a := range allocs {
		if a.ClientStatus != structs.AllocClientStatusFailed {
			continue
		}
		if tg := job.LookupTaskGroup(a.TaskGroup); tg == nil || outdated(a, job, tg) {
			continue
		}
		failures[a.Name] = append(failures[a.Name], time.Unix(0, a.ModifyTime))
	}
	for _, pl := range place {
		times := failures[pl.name]
		slices.SortFunc(times, time.Time.Compare)
		at, ok := policyFor(pl.group, fallback).due(times, now)
		switch {
		case !ok:
			r.gaveUp = append(r.gaveUp, pl.name)
		case at.After(now):
			if r.retryAt.IsZero() || at.Before(r.retryAt) {
				r.retryAt = at
			}
		default:
			r.place = append(r.place, pl)
		}
	}
	return r
}

// followUpEval returns a pending evaluation of eval's job that the broker
// holds until at, for the delayed reschedules.
func followUpEval(eval *structs.Evaluation, at, now time.Time) *structs.Evaluation {
	return &structs.Evaluation{
		ID:             structs.GenerateUUID(),
		Namespace:      eval.Namespace,
		Priority:       eval.Priority,
		Type:           eval.Type,
		TriggeredBy:    structs.EvalTriggerRetryFailed,
		JobID:          eval.JobID,
		JobModifyIndex: eval.JobModifyIndex,
		Status:         structs.EvalStatusPending,
		Wait:           at.Sub(now),
		PreviousEval:   eval.ID,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
}
