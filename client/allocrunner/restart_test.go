package allocrunner

import (
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

func TestRestartTracker(t *testing.T) {
	fail := &drivers.ExitResult{ExitCode: 1}
	ok := &drivers.ExitResult{}
	t0 := time.Unix(1000, 0)
	type exit struct {
		at  time.Duration // after t0
		res *drivers.ExitResult
	}
	type want struct {
		restart, failed bool
		delay           time.Duration
		reason          string
	}
	within := want{restart: true, delay: time.Second, reason: ReasonWithinPolicy}
	policy := func(attempts int, mode string) *structs.RestartPolicy {
		return &structs.RestartPolicy{Attempts: attempts, Interval: time.Minute, Delay: time.Second, Mode: mode}
	}
	tests := []struct {
		name    string
		policy  *structs.RestartPolicy
		jobType string
		exits   []exit
		want    []want
	}{
		{
			name: "fail mode gives up after attempts", policy: policy(2, "fail"), jobType: "batch",
			exits: []exit{{0, fail}, {time.Second, fail}, {2 * time.Second, fail}},
			want:  []want{within, within, {failed: true, reason: `Exceeded allowed attempts 2 in interval 1m0s and mode is "fail"`}},
		},
		{
			name: "batch success is done", policy: policy(2, "fail"), jobType: "batch",
			exits: []exit{{0, fail}, {time.Second, ok}},
			want:  []want{within, {reason: ReasonSuccess}},
		},
		{
			name: "service success restarts", policy: policy(1, "fail"), jobType: "service",
			exits: []exit{{0, ok}, {time.Second, ok}},
			want:  []want{within, {failed: true, reason: `Exceeded allowed attempts 1 in interval 1m0s and mode is "fail"`}},
		},
		{
			name: "window closes and attempts reset", policy: policy(1, "fail"), jobType: "batch",
			exits: []exit{{0, fail}, {2 * time.Minute, fail}, {2*time.Minute + time.Second, fail}},
			want:  []want{within, within, {failed: true, reason: `Exceeded allowed attempts 1 in interval 1m0s and mode is "fail"`}},
		},
		{
			name: "delay mode waits out the window", policy: policy(1, "delay"), jobType: "batch",
			exits: []exit{{0, fail}, {10 * time.Second, fail}, {time.Minute + time.Second, fail}},
			want: []want{
				within,
				{restart: true, delay: 50 * time.Second, reason: `Exceeded allowed attempts 1 in interval 1m0s and mode is "delay"`},
				within,
			},
		},
		{
			name: "delay mode without delay or interval still waits", jobType: "service",
			policy: &structs.RestartPolicy{Attempts: 1, Mode: "delay"},
			exits:  []exit{{0, fail}, {0, fail}, {time.Second, fail}, {time.Second, fail}},
			want: []want{
				{restart: true, reason: ReasonWithinPolicy},
				{restart: true, delay: minDelayModeWait, reason: `Exceeded allowed attempts 1 in interval 0s and mode is "delay"`},
				{restart: true, reason: ReasonWithinPolicy},
				{restart: true, delay: minDelayModeWait, reason: `Exceeded allowed attempts 1 in interval 0s and mode is "delay"`},
			},
		},
		{
			name: "negative delay is no delay", policy: &structs.RestartPolicy{Attempts: 1, Delay: -time.Second, Mode: "fail"}, jobType: "batch",
			exits: []exit{{0, fail}},
			want:  []want{{restart: true, reason: ReasonWithinPolicy}},
		},
		{
			name: "no attempts allowed", policy: policy(0, "fail"), jobType: "batch",
			exits: []exit{{0, fail}},
			want:  []want{{failed: true, reason: ReasonNoRestarts}},
		},
		{
			name: "driver error counts as a failure", policy: policy(1, "fail"), jobType: "service",
			exits: []exit{{0, &drivers.ExitResult{ExitCode: -1, Err: errTest}}},
			want:  []want{within},
		},
		{
			name: "nil policy uses the job type's default", policy: nil, jobType: "batch",
			exits: []exit{{0, fail}, {0, fail}, {0, fail}, {0, fail}},
			want: []want{
				{restart: true, delay: 15 * time.Second, reason: ReasonWithinPolicy},
				{restart: true, delay: 15 * time.Second, reason: ReasonWithinPolicy},
				{restart: true, delay: 15 * time.Second, reason: ReasonWithinPolicy},
				{failed: true, reason: `Exceeded allowed attempts 3 in interval 24h0m0s and mode is "fail"`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRestartTracker(tt.policy, tt.jobType)
			for i, e := range tt.exits {
				d := rt.next(t0.Add(e.at), e.res)
				got := want{restart: d.restart, failed: d.failed, delay: d.delay, reason: d.reason}
				if got != tt.want[i] {
					t.Errorf("exit %d: got %+v, want %+v", i, got, tt.want[i])
				}
			}
		})
	}
}
