package state

import (
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestUpsertAllocsKeepsClientFields(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	must(t, s.UpsertJob(1, job))
	a := testAlloc("a1", job, "n1", "e1")
	must(t, s.UpsertAllocs(2, []*structs.Allocation{a}))
	got, _ := s.AllocByID(nil, "a1")
	if got.ClientStatus != structs.AllocClientStatusPending || got.CreateIndex != 2 || got.AllocModifyIndex != 2 {
		t.Fatalf("new alloc: got status %q create %d alloc-modify %d", got.ClientStatus, got.CreateIndex, got.AllocModifyIndex)
	}

	running := a.Copy()
	running.ClientStatus = structs.AllocClientStatusRunning
	running.ClientDescription = "tasks are running"
	running.TaskStates = map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning}}
	must(t, s.UpdateAllocsFromClient(3, []*structs.Allocation{running}))
	got, _ = s.AllocByID(nil, "a1")
	if got.ClientStatus != structs.AllocClientStatusRunning || got.ModifyIndex != 3 || got.AllocModifyIndex != 2 {
		t.Fatalf("client update: got status %q modify %d alloc-modify %d", got.ClientStatus, got.ModifyIndex, got.AllocModifyIndex)
	}
	running.TaskStates["t"].State = "mutated by caller"
	if got.TaskStates["t"].State != structs.TaskStateRunning {
		t.Errorf("task states aliased from the caller")
	}

	tests := []struct {
		name       string
		client     string
		wantStatus string
		wantTasks  int
	}{
		{"stop keeps client fields", structs.AllocClientStatusPending, structs.AllocClientStatusRunning, 1},
		{"lost overrides", structs.AllocClientStatusLost, structs.AllocClientStatusLost, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stop := a.Copy()
			stop.DesiredStatus = structs.AllocDesiredStatusStop
			stop.ClientStatus = tt.client
			stop.TaskStates = nil
			stop.Job = nil
			index := uint64(10 + i)
			must(t, s.UpsertAllocs(index, []*structs.Allocation{stop}))
			got, _ := s.AllocByID(nil, "a1")
			if got.ClientStatus != tt.wantStatus || len(got.TaskStates) != tt.wantTasks {
				t.Errorf("got status %q tasks %d, want %q %d", got.ClientStatus, len(got.TaskStates), tt.wantStatus, tt.wantTasks)
			}
			if got.DesiredStatus != structs.AllocDesiredStatusStop || got.AllocModifyIndex != index || got.CreateIndex != 2 {
				t.Errorf("got desired %q alloc-modify %d create %d", got.DesiredStatus, got.AllocModifyIndex, got.CreateIndex)
			}
			if got.Job == nil || got.Job.ID != "j" {
				t.Errorf("alloc lost its job")
			}
		})
	}
}

func TestUpsertAllocsFillsJobFromState(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	must(t, s.UpsertJob(1, job))
	a := testAlloc("a1", job, "n1", "e1")
	a.Job = nil
	must(t, s.UpsertAllocs(2, []*structs.Allocation{a}))
	got, _ := s.AllocByID(nil, "a1")
	if got.Job == nil || got.Job.ID != "j" {
		t.Errorf("alloc job not filled from state: %+v", got.Job)
	}
}

func TestUpdateAllocsFromClientIgnoresUnknown(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	a := testAlloc("ghost", job, "n1", "e1")
	a.ClientStatus = structs.AllocClientStatusRunning
	must(t, s.UpdateAllocsFromClient(5, []*structs.Allocation{a}))
	if got, _ := s.AllocByID(nil, "ghost"); got != nil {
		t.Errorf("unknown alloc was created")
	}
	if idx, _ := s.Index(TableAllocs); idx != 0 {
		t.Errorf("allocs index moved to %d with nothing written", idx)
	}
}

func TestAllocLookups(t *testing.T) {
	s := newTestStore(t)
	j1, j2 := testJob("j1", structs.JobTypeService), testJob("j2", structs.JobTypeService)
	j2.Namespace = "team"
	must(t, s.UpsertAllocs(1, []*structs.Allocation{
		testAlloc("c3", j1, "n1", "e1"),
		testAlloc("a1", j1, "n2", "e1"),
		testAlloc("a2", j2, "n1", "e2"),
	}))
	lookup := func(f func() ([]*structs.Allocation, error)) []string {
		out, err := f()
		must(t, err)
		return ids(out)
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"by job", lookup(func() ([]*structs.Allocation, error) { return s.AllocsByJob(nil, "default", "j1") }), []string{"a1", "c3"}},
		{"by job other namespace", lookup(func() ([]*structs.Allocation, error) { return s.AllocsByJob(nil, "team", "j1") }), []string{}},
		{"by node", lookup(func() ([]*structs.Allocation, error) { return s.AllocsByNode(nil, "n1") }), []string{"a2", "c3"}},
		{"by eval", lookup(func() ([]*structs.Allocation, error) { return s.AllocsByEval(nil, "e2") }), []string{"a2"}},
		{"all", lookup(func() ([]*structs.Allocation, error) { return s.Allocs(nil, "") }), []string{"a1", "a2", "c3"}},
		{"namespace", lookup(func() ([]*structs.Allocation, error) { return s.Allocs(nil, "team") }), []string{"a2"}},
		{"prefix", lookup(func() ([]*structs.Allocation, error) { return s.AllocsByIDPrefix(nil, "*", "a") }), []string{"a1", "a2"}},
		{"prefix in namespace", lookup(func() ([]*structs.Allocation, error) { return s.AllocsByIDPrefix(nil, "default", "a") }), []string{"a1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestEvalLookups(t *testing.T) {
	s := newTestStore(t)
	j1, j2 := testJob("j1", structs.JobTypeService), testJob("j2", structs.JobTypeService)
	j2.Namespace = "team"
	must(t, s.UpsertEvals(1, []*structs.Evaluation{
		testEval("b1", j1, structs.EvalStatusPending),
		testEval("a1", j1, structs.EvalStatusPending),
		testEval("a2", j2, structs.EvalStatusPending),
	}))
	must(t, s.UpsertEvals(2, []*structs.Evaluation{testEval("a1", j1, structs.EvalStatusComplete)}))
	e, _ := s.EvalByID(nil, "a1")
	if e.CreateIndex != 1 || e.ModifyIndex != 2 || e.Status != structs.EvalStatusComplete {
		t.Errorf("eval update: got create %d modify %d status %s", e.CreateIndex, e.ModifyIndex, e.Status)
	}
	byJob, _ := s.EvalsByJob(nil, "", "j1")
	all, _ := s.Evals(nil, "*")
	team, _ := s.Evals(nil, "team")
	pre, _ := s.EvalsByIDPrefix(nil, "", "a")
	tests := []struct {
		name      string
		got, want []string
	}{
		{"by job", ids(byJob), []string{"a1", "b1"}},
		{"all", ids(all), []string{"a1", "a2", "b1"}},
		{"namespace", ids(team), []string{"a2"}},
		{"prefix", ids(pre), []string{"a1", "a2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestJobSummary(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeService)
	job.TaskGroups = append(job.TaskGroups, &structs.TaskGroup{Name: "db", Count: 2})
	must(t, s.UpsertJob(1, job))
	old := testEval("e-old", job, structs.EvalStatusComplete)
	old.QueuedAllocations = map[string]int{"web": 5}
	must(t, s.UpsertEvals(2, []*structs.Evaluation{old}))
	latest := testEval("e-new", job, structs.EvalStatusComplete)
	latest.QueuedAllocations = map[string]int{"db": 2, "web": 0}
	must(t, s.UpsertEvals(3, []*structs.Evaluation{latest}))

	var allocs []*structs.Allocation
	statuses := []string{"pending", "running", "running", "complete", "failed", "lost"}
	for i := range statuses {
		allocs = append(allocs, testAlloc(string(rune('a'+i)), job, "n1", "e-new"))
	}
	must(t, s.UpsertAllocs(4, allocs))
	var updates []*structs.Allocation
	for i, st := range statuses {
		u := allocs[i].Copy()
		u.ClientStatus = st
		updates = append(updates, u)
	}
	must(t, s.UpdateAllocsFromClient(5, updates))

	sum, err := s.JobSummary(nil, "default", "j")
	must(t, err)
	want := map[string]structs.TaskGroupSummary{
		"web": {Starting: 1, Running: 2, Complete: 1, Failed: 1, Lost: 1},
		"db":  {Queued: 2},
	}
	if len(sum.Summary) != 2 || sum.Summary["web"] != want["web"] || sum.Summary["db"] != want["db"] {
		t.Errorf("summary: got %+v, want %+v", sum.Summary, want)
	}
	if sum.CreateIndex != 1 || sum.ModifyIndex < 5 {
		t.Errorf("summary indexes: got create %d modify %d", sum.CreateIndex, sum.ModifyIndex)
	}
	if none, err := s.JobSummary(nil, "default", "absent"); none != nil || err != nil {
		t.Errorf("absent job: got %v %v, want nil nil", none, err)
	}
}

// TestClientUpdateNeverRevivesFinishedAlloc: a "running" report that
// arrives after "complete" (a retried update delivered late) is ignored,
// so the allocation does not hold its GPU again.
func TestClientUpdateNeverRevivesFinishedAlloc(t *testing.T) {
	s := newTestStore(t)
	job := testJob("j", structs.JobTypeBatch)
	must(t, s.UpsertNode(1, gpuTestNode("n1", 1)))
	must(t, s.UpsertJob(2, job))
	a := withDevices(testAlloc("a1", job, "n1", "e"), 100, &structs.AllocatedDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"n1-gpu0"}})
	must(t, s.UpsertAllocs(3, []*structs.Allocation{a}))
	must(t, s.UpdateAllocsFromClient(4, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusComplete}}))
	must(t, s.UpdateAllocsFromClient(5, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning,
		TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning}}}}))
	got, err := s.AllocByID(nil, "a1")
	must(t, err)
	if got.ClientStatus != structs.AllocClientStatusComplete || got.TaskStates["t"] != nil {
		t.Errorf("after a late running report: status %q, task states %v; want complete, unchanged", got.ClientStatus, got.TaskStates)
	}
	u, err := s.NodeUsage(nil, "n1")
	must(t, err)
	if u.FreeGPUs != 1 {
		t.Errorf("node has %d free GPUs, want its one GPU free", u.FreeGPUs)
	}
	// A later final report (failed after complete) is still taken.
	must(t, s.UpdateAllocsFromClient(6, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusFailed}}))
	if got, _ := s.AllocByID(nil, "a1"); got.ClientStatus != structs.AllocClientStatusFailed {
		t.Errorf("final report after final: %q, want failed", got.ClientStatus)
	}
}
