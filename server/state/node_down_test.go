package state

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestNodeDownLosesStoppedAllocs: when a node goes down, its allocations
// the servers stopped but its client never finished become lost (nothing
// else would ever finish them); those meant to run are the scheduler's
// to mark, and finished ones stay as they are.
func TestNodeDownLosesStoppedAllocs(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	must(t, s.UpsertNode(1, testNode("n1")))
	must(t, s.UpsertNode(2, testNode("n2")))
	must(t, s.UpsertJob(3, job))
	tests := []struct {
		id, node, desired, client string
		want                      string
	}{
		{"stopped-pending", "n1", structs.AllocDesiredStatusStop, structs.AllocClientStatusPending, structs.AllocClientStatusLost},
		{"stopped-running", "n1", structs.AllocDesiredStatusStop, structs.AllocClientStatusRunning, structs.AllocClientStatusLost},
		{"stopped-complete", "n1", structs.AllocDesiredStatusStop, structs.AllocClientStatusComplete, structs.AllocClientStatusComplete},
		{"run-pending", "n1", structs.AllocDesiredStatusRun, structs.AllocClientStatusPending, structs.AllocClientStatusPending},
		{"other-node", "n2", structs.AllocDesiredStatusStop, structs.AllocClientStatusPending, structs.AllocClientStatusPending},
	}
	var allocs []*structs.Allocation
	for _, tt := range tests {
		a := testAlloc(tt.id, job, tt.node, "e1")
		a.DesiredStatus = tt.desired
		allocs = append(allocs, a)
	}
	must(t, s.UpsertAllocs(4, allocs))
	var reports []*structs.Allocation
	for _, tt := range tests {
		reports = append(reports, &structs.Allocation{ID: tt.id, ClientStatus: tt.client})
	}
	must(t, s.UpdateAllocsFromClient(5, reports))

	must(t, s.UpdateNodeStatus(6, "n1", structs.NodeStatusDown, 1234))
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			a, err := s.AllocByID(nil, tt.id)
			if err != nil || a == nil {
				t.Fatalf("alloc: %v", err)
			}
			if a.ClientStatus != tt.want {
				t.Errorf("client status: got %s, want %s", a.ClientStatus, tt.want)
			}
			lost := tt.want == structs.AllocClientStatusLost
			if lost && (a.ClientDescription != DescNodeDown || a.ModifyIndex != 6 || a.ModifyTime != 1234 || a.Job == nil) {
				t.Errorf("lost alloc: description %q index %d time %d job %v", a.ClientDescription, a.ModifyIndex, a.ModifyTime, a.Job != nil)
			}
		})
	}
	sum, err := s.JobSummary(nil, job.Namespace, job.ID)
	must(t, err)
	if got := sum.Summary["web"]; got.Lost != 2 || got.Starting != 2 || got.Complete != 1 {
		t.Errorf("summary: got %+v, want 2 lost, 2 starting (one to be rescheduled, one on n2), 1 complete", got)
	}
}
