package structs

import "time"

// ReschedulePolicy says how the servers replace an allocation that
// failed: how many times within Interval, after what delay, growing how.
// The reschedule engineer fills in validation and defaults.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}
