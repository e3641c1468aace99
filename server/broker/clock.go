package broker

import "time"

// Clock creates the timers the broker uses for nack timeouts. Tests inject
// a fake one to fire timeouts without waiting.
type Clock interface {
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call made by a Clock.
type Timer interface {
	// Stop prevents the call if it has not run yet and reports whether it
	// did so.
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

// AfterFunc calls f in its own goroutine after d.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
