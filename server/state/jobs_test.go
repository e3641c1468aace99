package state

import (
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestUpsertJobVersions(t *testing.T) {
	tests := []struct {
		name        string
		change      func(j *structs.Job)
		wantVersion uint64
		wantJMI     uint64
	}{
		{"same spec", func(j *structs.Job) {}, 0, 10},
		{"only submit time and status differ", func(j *structs.Job) { j.SubmitTime = 77; j.Status = "dead"; j.Version = 9 }, 0, 10},
		{"count changed", func(j *structs.Job) { j.TaskGroups[0].Count = 3 }, 1, 11},
		{"stopped", func(j *structs.Job) { j.Stop = true }, 1, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			must(t, s.UpsertJob(10, testJob("j", structs.JobTypeService)))
			next := testJob("j", structs.JobTypeService)
			tt.change(next)
			must(t, s.UpsertJob(11, next))
			got, _ := s.JobByID(nil, "default", "j")
			if got.Version != tt.wantVersion || got.JobModifyIndex != tt.wantJMI || got.CreateIndex != 10 || got.ModifyIndex != 11 {
				t.Errorf("got version %d jmi %d create %d modify %d, want version %d jmi %d create 10 modify 11",
					got.Version, got.JobModifyIndex, got.CreateIndex, got.ModifyIndex, tt.wantVersion, tt.wantJMI)
			}
			if got.SubmitTime != next.SubmitTime {
				t.Errorf("submit time: got %d, want %d", got.SubmitTime, next.SubmitTime)
			}
		})
	}
}

func TestJobListings(t *testing.T) {
	s := newTestStore(t)
	for i, k := range []struct{ ns, id string }{{"default", "web"}, {"default", "api"}, {"team", "web"}, {"team2", "webby"}, {"", "worker"}} {
		j := testJob(k.id, structs.JobTypeService)
		j.Namespace = k.ns
		must(t, s.UpsertJob(uint64(i+1), j))
	}
	tests := []struct {
		name, ns, prefix string
		want             []string
	}{
		{"all", "*", "", []string{"default/api", "default/web", "team/web", "team2/webby", "default/worker"}},
		{"all by empty namespace", "", "", []string{"default/api", "default/web", "team/web", "team2/webby", "default/worker"}},
		{"one namespace", "team", "", []string{"team/web"}},
		{"prefix in namespace", "default", "w", []string{"default/web", "default/worker"}},
		{"prefix across namespaces", "*", "web", []string{"default/web", "team/web", "team2/webby"}},
		{"unknown namespace", "nope", "", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs, err := s.JobsByIDPrefix(nil, tt.ns, tt.prefix)
			must(t, err)
			if got := ids(jobs); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if j, _ := s.JobByID(nil, "", "worker"); j == nil || j.Namespace != "default" {
		t.Errorf("empty namespace should be default: got %+v", j)
	}
	all, _ := s.Jobs(nil, "*")
	if len(all) != 5 {
		t.Errorf("Jobs: got %d, want 5", len(all))
	}
}

func TestDeleteJob(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	must(t, s.UpsertJob(1, job))
	must(t, s.UpsertAllocs(2, []*structs.Allocation{testAlloc("a1", job, "n1", "e1")}))
	must(t, s.DeleteJob(3, "default", "j"))
	if got, _ := s.JobByID(nil, "default", "j"); got != nil {
		t.Errorf("job still there after delete")
	}
	if a, _ := s.AllocByID(nil, "a1"); a == nil {
		t.Errorf("delete job removed its alloc; the scheduler must stop it instead")
	}
	if idx, _ := s.Index(TableJobs); idx != 3 {
		t.Errorf("jobs index: got %d, want 3", idx)
	}
	must(t, s.DeleteJob(4, "default", "absent"))
}

// TestJobStatus drives a job through writes and checks the status the
// store derives after each.
func TestJobStatus(t *testing.T) {
	terminal := func(status string) func(*structs.Allocation) {
		return func(a *structs.Allocation) { a.ClientStatus = status }
	}
	tests := []struct {
		name       string
		jobType    string
		stop       bool
		evalStatus string // "" = no eval
		alloc      func(*structs.Allocation)
		want       string
	}{
		{"no evals no allocs", structs.JobTypeService, false, "", nil, structs.JobStatusPending},
		{"pending eval", structs.JobTypeService, false, structs.EvalStatusPending, nil, structs.JobStatusPending},
		{"running alloc", structs.JobTypeService, false, structs.EvalStatusComplete, func(*structs.Allocation) {}, structs.JobStatusRunning},
		{"stopped with running alloc", structs.JobTypeService, true, structs.EvalStatusComplete, func(*structs.Allocation) {}, structs.JobStatusRunning},
		{"stopped, alloc desired stop", structs.JobTypeService, true, structs.EvalStatusComplete,
			func(a *structs.Allocation) { a.DesiredStatus = structs.AllocDesiredStatusStop }, structs.JobStatusDead},
		{"stopped, nothing placed", structs.JobTypeService, true, structs.EvalStatusPending, nil, structs.JobStatusDead},
		{"batch complete", structs.JobTypeBatch, false, structs.EvalStatusComplete, terminal(structs.AllocClientStatusComplete), structs.JobStatusDead},
		{"batch failed", structs.JobTypeBatch, false, structs.EvalStatusComplete, terminal(structs.AllocClientStatusFailed), structs.JobStatusDead},
		{"batch complete, blocked eval", structs.JobTypeBatch, false, structs.EvalStatusBlocked, terminal(structs.AllocClientStatusComplete), structs.JobStatusPending},
		{"batch no allocs", structs.JobTypeBatch, false, structs.EvalStatusComplete, nil, structs.JobStatusPending},
		{"service all complete", structs.JobTypeService, false, structs.EvalStatusComplete, terminal(structs.AllocClientStatusComplete), structs.JobStatusPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			job := testJob("j", tt.jobType)
			job.Stop = tt.stop
			must(t, s.UpsertJob(1, job))
			if tt.alloc != nil {
				a := testAlloc("a1", job, "n1", "e1")
				must(t, s.UpsertAllocs(2, []*structs.Allocation{a}))
				update := a.Copy()
				tt.alloc(update)
				must(t, s.UpdateAllocsFromClient(3, []*structs.Allocation{update}))
				if update.DesiredStatus == structs.AllocDesiredStatusStop {
					must(t, s.UpsertAllocs(4, []*structs.Allocation{update}))
				}
			}
			if tt.evalStatus != "" {
				must(t, s.UpsertEvals(5, []*structs.Evaluation{testEval("e1", job, tt.evalStatus)}))
			}
			got, _ := s.JobByID(nil, "default", "j")
			if got.Status != tt.want {
				t.Errorf("got status %q, want %q", got.Status, tt.want)
			}
		})
	}
}

func TestJobStatusTransitionsBumpIndexOnlyOnChange(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeBatch)
	must(t, s.UpsertJob(1, job))
	must(t, s.UpsertEvals(2, []*structs.Evaluation{testEval("e1", job, structs.EvalStatusPending)}))
	j, _ := s.JobByID(nil, "default", "j")
	if j.ModifyIndex != 1 {
		t.Errorf("job rewritten without a status change: modify index %d", j.ModifyIndex)
	}
	a := testAlloc("a1", job, "n1", "e1")
	must(t, s.UpsertAllocs(3, []*structs.Allocation{a}))
	must(t, s.UpsertEvals(4, []*structs.Evaluation{testEval("e1", job, structs.EvalStatusComplete)}))
	done := a.Copy()
	done.ClientStatus = structs.AllocClientStatusComplete
	must(t, s.UpdateAllocsFromClient(5, []*structs.Allocation{done}))
	j, _ = s.JobByID(nil, "default", "j")
	if j.Status != structs.JobStatusDead || j.ModifyIndex != 5 {
		t.Errorf("got status %s modify %d, want dead 5", j.Status, j.ModifyIndex)
	}
	if idx, _ := s.Index(TableJobs); idx != 5 {
		t.Errorf("jobs index: got %d, want 5", idx)
	}
}
