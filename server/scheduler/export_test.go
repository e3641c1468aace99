package scheduler

import "time"

// DuePolicy exposes ReschedulePolicy.due to the external tests.
func DuePolicy(p ReschedulePolicy, failures []time.Time, now time.Time) (time.Time, bool) {
	return p.due(failures, now)
}
