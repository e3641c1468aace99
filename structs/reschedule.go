package structs

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Reschedule delay functions: how the wait before a replacement grows
// with the failures of one allocation name.
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// DelayFunctions lists the valid ReschedulePolicy.DelayFunction values.
var DelayFunctions = []string{DelayFunctionConstant, DelayFunctionExponential, DelayFunctionFibonacci}

// ReschedulePolicy says how the servers replace an allocation that
// failed: how many times within Interval, after what delay, growing how.
// A group without one gets DefaultReschedulePolicy of its job's type.
type ReschedulePolicy struct {
	// Attempts is how many replacements of one allocation name are made
	// within Interval; ignored when Unlimited.
	Attempts int
	Interval time.Duration
	// Delay is the wait before a replacement; DelayFunction says how it
	// grows with recent failures, capped at MaxDelay.
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}

// DefaultReschedulePolicy returns Nomad's default for jobType: a batch
// allocation is replaced once in 24 hours, 5 seconds after it failed; a
// service allocation always, after 30 seconds doubling up to an hour.
func DefaultReschedulePolicy(jobType string) *ReschedulePolicy {
	if jobType == JobTypeBatch || jobType == JobTypeSysBatch {
		return &ReschedulePolicy{
			Attempts: 1, Interval: 24 * time.Hour,
			Delay: 5 * time.Second, DelayFunction: DelayFunctionConstant,
		}
	}
	return &ReschedulePolicy{
		Unlimited: true, Interval: time.Hour,
		Delay: 30 * time.Second, DelayFunction: DelayFunctionExponential, MaxDelay: time.Hour,
	}
}

// Copy returns a copy of p (nil for nil).
func (p *ReschedulePolicy) Copy() *ReschedulePolicy {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// Canonicalize fills what p leaves out from jobType's default: the delay
// function, and for a growing delay its cap (an hour, or Delay when
// longer). A policy given in full is
// left alone.
func (p *ReschedulePolicy) Canonicalize(jobType string) {
	if p == nil {
		return
	}
	if p.DelayFunction == "" {
		p.DelayFunction = DefaultReschedulePolicy(jobType).DelayFunction
	}
	if p.DelayFunction != DelayFunctionConstant && p.MaxDelay == 0 {
		p.MaxDelay = max(time.Hour, p.Delay)
	}
}

// Validate reports every problem of p, joined; nil is valid (the default).
func (p *ReschedulePolicy) Validate() error {
	if p == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !slices.Contains(DelayFunctions, p.DelayFunction) {
		add("reschedule delay_function %q is not one of constant, exponential, fibonacci", p.DelayFunction)
	}
	if p.Attempts < 0 {
		add("reschedule attempts %d must not be negative", p.Attempts)
	}
	if p.Delay < 0 || p.Interval < 0 || p.MaxDelay < 0 {
		add("reschedule delay, max_delay and interval must not be negative")
	}
	if !p.Unlimited && p.Attempts > 0 && p.Interval == 0 {
		add("reschedule interval must be set when attempts is %d and unlimited is false", p.Attempts)
	}
	if p.DelayFunction != DelayFunctionConstant && p.MaxDelay < p.Delay {
		add("reschedule max_delay %s must not be below delay %s with the %s delay function", p.MaxDelay, p.Delay, p.DelayFunction)
	}
	return errors.Join(errs...)
}
