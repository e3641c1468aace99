package scheduler_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// TestCountOnlyChangeUpdatesInPlace: a job change that keeps the group's
// spec replaces nothing; every allocation moves to the new version in
// place (same ID) and the new name is placed.
func TestCountOnlyChangeUpdatesInPlace(t *testing.T) {
	tests := []struct {
		name   string
		change func(*structs.Job)
		want   []string
	}{
		{
			name:   "count",
			change: func(j *structs.Job) { j.TaskGroups[0].Count = 6 },
			want:   []string{"web.web[0]@1", "web.web[1]@1", "web.web[2]@1", "web.web[3]@1", "web.web[4]@1", "web.web[5]@1"},
		},
		{
			name:   "update strategy",
			change: func(j *structs.Job) { j.TaskGroups[0].Update.MaxParallel = 3 },
			want:   []string{"web.web[0]@1", "web.web[1]@1", "web.web[2]@1", "web.web[3]@1", "web.web[4]@1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			job := runningService(t, h, 5, 1)
			var before []string
			for _, a := range h.LiveAllocs(ns, "web") {
				before = append(before, a.ID)
			}

			changed := job.Copy()
			tt.change(changed)
			process(t, h, h.RegisterJob(changed))

			if got := versions(h); !slices.Equal(got, tt.want) {
				t.Errorf("live: got %v, want %v", got, tt.want)
			}
			for _, id := range before {
				a, err := h.State.AllocByID(nil, id)
				if err != nil || a == nil {
					t.Fatalf("read alloc %s: %v", id, err)
				}
				if a.TerminalStatus() || a.ClientStatus != structs.AllocClientStatusRunning {
					t.Errorf("%s: got %s/%s, want run/running (kept in place)", a.Name, a.DesiredStatus, a.ClientStatus)
				}
			}
			plans := h.Plans()
			last := plans[len(plans)-1]
			if n := len(last.NodeUpdate); n != 0 {
				t.Errorf("plan stops allocations on %d nodes, want none", n)
			}
			updated := 0
			for _, allocs := range last.NodeInPlaceUpdate {
				updated += len(allocs)
			}
			if updated != len(before) {
				t.Errorf("in-place updates in the plan: got %d, want %d", updated, len(before))
			}
		})
	}
}

// TestInPlaceBesideRollingReplacement: a job change that alters one group
// and only the count of another updates the second in place while the
// first rolls.
func TestInPlaceBesideRollingReplacement(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("cpu-1", 0, "", 0))
	job := schedtest.ServiceJob("web", 2)
	side := job.TaskGroups[0].Copy()
	side.Name = "side"
	job.TaskGroups = append(job.TaskGroups, side)
	process(t, h, h.RegisterJob(job))
	markRunning(t, h)

	changed := envChanged(job, "2")
	changed.TaskGroups[1].Count = 3
	process(t, h, h.RegisterJob(changed))

	var got []string
	for _, a := range h.LiveAllocs(ns, "web") {
		got = append(got, fmt.Sprintf("%s@%d", a.Name, a.Job.Version))
	}
	slices.Sort(got)
	want := []string{"web.side[0]@1", "web.side[1]@1", "web.side[2]@1", "web.web[0]@1", "web.web[1]@0"}
	if !slices.Equal(got, want) {
		t.Errorf("live: got %v, want %v", got, want)
	}
}
