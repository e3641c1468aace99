package server

import (
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// TestJobRegisterIgnoresSubmitTime: a registration's SubmitTime is the
// server's time, not the caller's: one far in the future would keep a
// dead job from garbage collection forever, one in the past would make a
// periodic parent launch a "missed" run at once.
func TestJobRegisterIgnoresSubmitTime(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	before := time.Now()
	job := gpuJob("j", structs.JobTypeBatch, 1, 0)
	job.SubmitTime = time.Now().Add(100 * 365 * 24 * time.Hour).UnixNano()
	registerJob(t, s, job)
	got := time.Unix(0, storedJob(t, s, "j").SubmitTime)
	if got.Before(before) || got.After(time.Now()) {
		t.Errorf("stored SubmitTime %v, want the registration's time (after %v)", got, before)
	}
}
