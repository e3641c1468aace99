package structs

import (
	"strings"
	"testing"
	"time"
)

func TestUpdateStrategyValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*UpdateStrategy)
		want   string // "" valid, else a substring of the error
	}{
		{name: "default", change: func(*UpdateStrategy) {}},
		{name: "no limit", change: func(u *UpdateStrategy) { u.MaxParallel = 0 }},
		{name: "no progress deadline", change: func(u *UpdateStrategy) { u.ProgressDeadline = 0 }},
		{name: "negative max_parallel", change: func(u *UpdateStrategy) { u.MaxParallel = -1 }, want: "max_parallel -1 must not be negative"},
		{name: "health check", change: func(u *UpdateStrategy) { u.HealthCheck = "http" }, want: `health_check "http"`},
		{name: "stagger", change: func(u *UpdateStrategy) { u.Stagger = 0 }, want: "stagger 0s must be positive"},
		{name: "negative min_healthy_time", change: func(u *UpdateStrategy) { u.MinHealthyTime = -time.Second }, want: "must not be negative"},
		{name: "min_healthy_time past deadline", change: func(u *UpdateStrategy) { u.MinHealthyTime = 5 * time.Minute }, want: "min_healthy_time 5m0s must be below healthy_deadline 5m0s"},
		{name: "deadline past progress", change: func(u *UpdateStrategy) { u.HealthyDeadline = 10 * time.Minute }, want: "healthy_deadline 10m0s must be below progress_deadline 10m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := DefaultUpdateStrategy()
			tt.change(u)
			err := u.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	var none *UpdateStrategy
	if err := none.Validate(); err != nil || none.Rolling() {
		t.Errorf("nil strategy: got %v, rolling %v; want valid and not rolling", err, none.Rolling())
	}
}

// TestJobCanonicalizeUpdate: a service job gets the default strategy and
// its groups a copy of the job's; a batch job gets none; a group's own
// is kept and filled.
func TestJobCanonicalizeUpdate(t *testing.T) {
	newJob := func(typ string) *Job {
		return &Job{ID: "j", Type: typ, TaskGroups: []*TaskGroup{{Name: "a"}, {Name: "b", Update: &UpdateStrategy{MaxParallel: 3}}}}
	}
	service := newJob(JobTypeService)
	service.Canonicalize()
	if *service.Update != *DefaultUpdateStrategy() {
		t.Errorf("job: got %+v, want the default", service.Update)
	}
	if a := service.TaskGroups[0].Update; a == service.Update || *a != *service.Update {
		t.Errorf("group a: got %p %+v, want a copy of the job's %p", a, a, service.Update)
	}
	b := service.TaskGroups[1].Update
	if b.MaxParallel != 3 || b.Stagger != 30*time.Second || b.HealthyDeadline != 5*time.Minute || b.MinHealthyTime != 0 {
		t.Errorf("group b: got %+v, want max_parallel 3, zero-invalid fields filled, min_healthy_time kept 0", b)
	}

	batch := newJob(JobTypeBatch)
	batch.Canonicalize()
	if batch.Update != nil || batch.TaskGroups[0].Update != nil {
		t.Errorf("batch: got job %+v, group %+v; want none", batch.Update, batch.TaskGroups[0].Update)
	}
}

func TestJobCopyUpdate(t *testing.T) {
	job := &Job{Update: DefaultUpdateStrategy(), TaskGroups: []*TaskGroup{{Update: DefaultUpdateStrategy()}}}
	c := job.Copy()
	c.Update.MaxParallel = 9
	c.TaskGroups[0].Update.MaxParallel = 9
	if job.Update.MaxParallel != 1 || job.TaskGroups[0].Update.MaxParallel != 1 {
		t.Errorf("copy shares the update strategy: job %d, group %d, want 1", job.Update.MaxParallel, job.TaskGroups[0].Update.MaxParallel)
	}
}

func TestPlanInPlaceUpdate(t *testing.T) {
	old := &Allocation{ID: "a", NodeID: "n1", EvalID: "e0", Job: &Job{Version: 1}}
	next := &Job{Version: 2}
	p := &Plan{EvalID: "e1"}
	if !p.IsNoOp() {
		t.Fatalf("empty plan: got not a no-op")
	}
	p.AppendInPlaceUpdate(old, next)
	if p.IsNoOp() {
		t.Errorf("plan with an in-place update: got a no-op")
	}
	got := p.NodeInPlaceUpdate["n1"]
	if len(got) != 1 || got[0] == old || got[0].Job != next || got[0].EvalID != "e1" || old.Job.Version != 1 {
		t.Errorf("in-place update: got %+v, want a copy of a with the new job and eval, a untouched", got)
	}
	if full, want, actual := (&PlanResult{}).FullCommit(p); full || want != 1 || actual != 0 {
		t.Errorf("FullCommit of nothing: got %v %d/%d, want false 0/1", full, actual, want)
	}
	if full, _, _ := (&PlanResult{NodeInPlaceUpdate: p.NodeInPlaceUpdate}).FullCommit(p); !full {
		t.Errorf("FullCommit with the update: got false, want true")
	}
}

func TestJobWarnings(t *testing.T) {
	revert := &UpdateStrategy{MaxParallel: 1, HealthCheck: UpdateHealthCheckManual}
	tests := []struct {
		name string
		job  *Job
		want []string // a substring per warning, in order
	}{
		{"none", &Job{Update: &UpdateStrategy{MaxParallel: 1, AutoRevert: true}, TaskGroups: []*TaskGroup{{Name: "web"}}}, nil},
		{"job level", &Job{Update: revert, TaskGroups: []*TaskGroup{{Name: "web", Update: revert}}}, []string{`job update health_check = "manual"`}},
		{"group level", &Job{TaskGroups: []*TaskGroup{{Name: "a"}, {Name: "b", Update: revert}}}, []string{`group "b": update health_check = "manual"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.job.Warnings()
			if len(got) != len(tt.want) {
				t.Fatalf("Warnings() = %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
