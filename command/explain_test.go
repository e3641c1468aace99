package command

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/jobspec"
	"github.com/droverhq/drover/structs"
)

func TestSpecDiff(t *testing.T) {
	base := func() *structs.Job {
		j := testJob()
		j.Meta = map[string]string{"owner": "ml"}
		j.Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1"}}
		j.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 500, MemoryMB: 256,
			Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 2}}}
		return j
	}
	tests := []struct {
		name   string
		change func(j *structs.Job)
		want   []string
	}{
		{name: "unchanged", change: func(*structs.Job) {}},
		{
			name: "server-owned fields ignored",
			change: func(j *structs.Job) {
				j.Version, j.Status, j.SubmitTime, j.JobModifyIndex, j.Stop = 7, "dead", 1, 99, true
			},
		},
		{
			name:   "count",
			change: func(j *structs.Job) { j.TaskGroups[0].Count = 4 },
			want:   []string{`~ TaskGroups["train"].Count: 2 => 4`},
		},
		{
			name:   "device count, keyed by names",
			change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.Devices[0].Count = 4 },
			want:   []string{`~ TaskGroups["train"].Tasks["main"].Resources.Devices["nvidia/gpu"].Count: 2 => 4`},
		},
		{
			name: "added and removed",
			change: func(j *structs.Job) {
				j.Meta = map[string]string{"team": "vision"}
				j.Constraints = nil
			},
			want: []string{
				`- Constraints[0].LTarget: "${meta.rack}"`,
				`- Constraints[0].Operand: "="`,
				`- Constraints[0].RTarget: "r1"`,
				`- Meta.owner: "ml"`,
				`+ Meta.team: "vision"`,
			},
		},
		{
			name:   "list of scalars",
			change: func(j *structs.Job) { j.Datacenters = []string{"dc1", "dc2"} },
			want:   []string{`~ Datacenters: ["dc1"] => ["dc1", "dc2"]`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, job := base(), base()
			tt.change(job)
			if got := specDiff(old, job); !slices.Equal(got, tt.want) {
				t.Errorf("specDiff:\ngot  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestSpecDiffCanonical: a job file as parsed (defaults not filled in) is
// no change against the same job as the server stored it.
func TestSpecDiffCanonical(t *testing.T) {
	local, err := jobspec.ParseFile("testdata/good.hcl")
	if err != nil {
		t.Fatal(err)
	}
	stored := storedGoodJob(t)
	if got := specDiff(stored, local); len(got) != 0 {
		t.Errorf("specDiff(stored, parsed) = %q, want no change", got)
	}
}

// storedGoodJob is testdata/good.hcl as the server keeps it: canonical,
// with its server-owned fields set.
func storedGoodJob(t *testing.T) *structs.Job {
	t.Helper()
	j, err := jobspec.ParseFile("testdata/good.hcl")
	if err != nil {
		t.Fatal(err)
	}
	j.Canonicalize()
	j.Status, j.Version, j.SubmitTime, j.CreateIndex, j.ModifyIndex, j.JobModifyIndex = structs.JobStatusRunning, 3, hourAgo, 5, 9, 9
	return j
}

// planResponse is a dry run of an edited job with two groups: "train"
// places two allocations (one on GPUs) and stops one; "eval" could place
// nothing.
func planResponse() *structs.JobPlanResponse {
	return &structs.JobPlanResponse{
		JobModifyIndex: 9,
		Diff:           &structs.JobDiff{Type: structs.DiffTypeEdited, ID: "train"},
		Annotations: &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{
			"train": {Place: 2, Stop: 1, InPlaceUpdate: 1},
			"eval":  {},
		}},
		Placements: []*structs.PlannedAlloc{
			{Name: "train.train[2]", TaskGroup: "train", NodeID: nodeID, NodeName: "gpu-node-1", GPUs: []string{gpu2, gpu3}},
			{Name: "train.train[1]", TaskGroup: "train", NodeID: nodeID, NodeName: "gpu-node-1", GPUs: []string{gpu0, gpu1}},
		},
		Stops: []*structs.PlannedAlloc{
			{Name: "train.train[0]", TaskGroup: "train", NodeID: nodeID, NodeName: "gpu-node-1", Reason: "alloc is being updated"},
		},
		FailedTGAllocs: map[string]*structs.AllocMetric{"eval": {
			NodesEvaluated: 3, NodesFiltered: 1, NodesExhausted: 2,
			ConstraintFiltered: map[string]int{"distinct_property: ${meta.rack}=r1 has 1 of 1": 1},
			DimensionExhausted: map[string]int{"devices: nvidia/gpu: 0 of 4 free, need 1": 2},
		}},
	}
}

func TestJobPlanGolden(t *testing.T) {
	diff := []string{`~ TaskGroups["train"].Count: 1 => 3`}
	golden(t, "job_plan", formatPlan("train", planResponse(), diff, false))
}

func TestJobPlan(t *testing.T) {
	stored := storedGoodJob(t)
	stored.TaskGroups[0].Count = 3
	stored.TaskGroups[0].Tasks[0].Resources.Devices[0].Count = 1
	tests := []struct {
		name      string
		resp      *structs.JobPlanResponse
		serveJob  bool
		wantCode  int
		wantOut   []string
		wantNot   []string
		wantErr   string
		wantReads int // GETs of the stored job
	}{
		{
			name: "edited job shows each changed field", resp: planResponse(), serveJob: true, wantCode: exitNotPlaced, wantReads: 1,
			wantOut: []string{
				`Job: "train" (edited)`,
				`  ~ TaskGroups["train"].Count: 3 => 1`,
				`  ~ TaskGroups["train"].Tasks["main"].Resources.Devices["nvidia/gpu"].Count: 1 => 2`,
				`Task Group: "train" (2 place, 1 stop, 1 in-place update)`,
				`Task Group: "eval" (0 place, 0 stop, 1 not placed)`,
				"  + train.train[1] on node 5e6f7a8b (gpu-node-1), GPUs " + gpu0 + "," + gpu1,
				"  - train.train[0] on node 5e6f7a8b: alloc is being updated",
				`- Task Group "eval" (failed to place 1 allocation):`,
				"    * 3 nodes evaluated: 1 filtered, 2 exhausted",
				"    * Constraint `distinct_property: ${meta.rack}=r1 has 1 of 1` filtered 1 node",
				"    * Resources exhausted on 2 nodes: devices: nvidia/gpu: 0 of 4 free, need 1",
			},
		},
		{
			name: "new job reads nothing back", wantCode: exitPlaced,
			resp: &structs.JobPlanResponse{
				Diff:        &structs.JobDiff{Type: structs.DiffTypeAdded},
				Annotations: &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{"train": {Place: 1}}},
				Placements:  []*structs.PlannedAlloc{{Name: "train.train[0]", TaskGroup: "train", NodeID: nodeID, NodeName: "gpu-node-1", GPUs: []string{gpu0, gpu1}}},
			},
			wantOut: []string{`Job: "train" (added)`, `Task Group: "train" (1 place, 0 stop)`, "GPUs " + gpu0, "- All tasks successfully allocated."},
			wantNot: []string{"~ ", "Task Group \"train\" (failed"},
		},
		{
			name: "stored job unreadable: plan without field diff", resp: planResponse(), wantCode: exitNotPlaced, wantReads: 1,
			wantOut: []string{`Job: "train" (edited)`, `Task Group: "train"`},
			wantNot: []string{"~ TaskGroups"},
			wantErr: "no field diff",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := newFakeAgent(t)
			f.on("PUT /v1/job/train/plan", tt.resp)
			if tt.serveJob {
				f.on("GET /v1/job/train", stored)
			}
			code, stdout, stderr := run(t, addr, "job", "plan", "testdata/good.hcl")
			if code != tt.wantCode {
				t.Errorf("exit = %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, stdout)
				}
			}
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.wantErr)
			}
			reads := 0
			for _, r := range f.requests() {
				if strings.HasPrefix(r, "GET /v1/job/train?") {
					reads++
				}
			}
			if reads != tt.wantReads {
				t.Errorf("GETs of the stored job = %d, want %d (requests %v)", reads, tt.wantReads, f.requests())
			}
		})
	}
}

// TestJobStatusExplainsBlockedGroups: `job status` shows, for a group
// waiting on GPUs, the node counts and the count per reason of the
// newest blocked evaluation, and explains a job blocked only because its
// plans kept losing to concurrent ones.
func TestJobStatusExplainsBlockedGroups(t *testing.T) {
	exhausted := map[string]*structs.AllocMetric{"train": {
		NodesEvaluated: 2, NodesExhausted: 2,
		DimensionExhausted: map[string]int{"devices: nvidia/gpu: 0 of 4 free, need 2": 2},
	}}
	tests := []struct {
		name    string
		evals   []*structs.Evaluation
		wantOut []string
		wantNot []string
	}{
		{
			name: "blocked on GPUs",
			evals: []*structs.Evaluation{
				{ID: evalID1, Status: structs.EvalStatusComplete, CreateIndex: 15, BlockedEval: evalID2, FailedTGAllocs: exhausted},
				{ID: evalID2, Status: structs.EvalStatusBlocked, TriggeredBy: structs.EvalTriggerQueuedAllocs, CreateIndex: 16, FailedTGAllocs: exhausted},
			},
			wantOut: []string{
				`Task Group "train" (failed to place 1 allocation):`,
				"  * 2 nodes evaluated: 0 filtered, 2 exhausted",
				"  * Resources exhausted on 2 nodes: devices: nvidia/gpu: 0 of 4 free, need 2",
				"The job is waiting for GPUs",
			},
			wantNot: []string{"maximum plan attempts"},
		},
		{
			name: "blocked by plan contention",
			evals: []*structs.Evaluation{
				{ID: evalID1, Status: structs.EvalStatusFailed, CreateIndex: 15, BlockedEval: evalID2, StatusDescription: "maximum plan attempts reached (5)"},
				{ID: evalID2, Status: structs.EvalStatusBlocked, TriggeredBy: structs.EvalTriggerMaxPlans, CreateIndex: 16},
			},
			wantOut: []string{`Evaluation "b10cb10c" waiting for additional capacity`, "other placements took it first in every attempt (maximum plan attempts)"},
			wantNot: []string{"Task Group \"train\" (failed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := newFakeAgent(t)
			serveJob(f)
			f.on("GET /v1/job/train/evaluations", tt.evals)
			code, stdout, stderr := run(t, addr, "job", "status", "train")
			if code != 0 {
				t.Fatalf("exit = %d, want 0; stderr %q", code, stderr)
			}
			section := stdout[strings.Index(stdout, "Placement Failure"):]
			for _, w := range tt.wantOut {
				if !strings.Contains(section, w) {
					t.Errorf("Placement Failure section lacks %q:\n%s", w, section)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(section, w) {
					t.Errorf("Placement Failure section has %q:\n%s", w, section)
				}
			}
		})
	}
}

// TestAllocStatusVerbose: `alloc status -verbose` prints the placement
// metrics with node counts, per-reason counts and every node's score per
// ranker with full IDs; without -verbose, the top five.
func TestAllocStatusVerbose(t *testing.T) {
	a := testAllocs()[0]
	a.Metrics = placedMetric()
	f, addr := newFakeAgent(t)
	f.on("GET /v1/allocation/"+allocID1, a)
	code, stdout, stderr := run(t, addr, "alloc", "status", "-verbose", allocID1)
	if code != 0 {
		t.Fatalf("exit = %d, want 0; stderr %q", code, stderr)
	}
	metrics := stdout[strings.Index(stdout, "Placement Metrics"):]
	for _, w := range []string{
		"Nodes Evaluated = 9", "Nodes Filtered  = 1", "Nodes Exhausted = 2",
		"  * Constraint `${attr.kernel.name} = linux` filtered 1 node",
		"  * Resources exhausted on 2 nodes: devices: nvidia/gpu: 1 of 8 free, need 2",
		"a6000000-0000-4000-8000-000000000000",
	} {
		if !strings.Contains(metrics, w) {
			t.Errorf("Placement Metrics lacks %q:\n%s", w, metrics)
		}
	}
	wantRows := [][]string{
		{"Node", "binpack", "fragmentation", "job-anti-affinity", "Final", "Score"},
		{nodeID, "0.9", "0.8", "0", "0.567"},
	}
	for _, want := range wantRows {
		if !slices.ContainsFunc(strings.Split(metrics, "\n"), func(l string) bool { return slices.Equal(strings.Fields(l), want) }) {
			t.Errorf("Placement Metrics lacks the row %q:\n%s", want, metrics)
		}
	}
	golden(t, "alloc_status_verbose", strings.TrimRight(metrics, "\n"))

	_, short, _ := run(t, addr, "alloc", "status", allocID1)
	if !strings.Contains(short, "a5000000 ") || strings.Contains(short, "a6000000") {
		t.Errorf("alloc status without -verbose: want the top five scores (a5000000, not a6000000):\n%s", short)
	}
}

// placedMetric is the metric of a placement on nodeID among six scored
// nodes.
func placedMetric() *structs.AllocMetric {
	m := &structs.AllocMetric{
		NodesEvaluated: 9, NodesFiltered: 1, NodesExhausted: 2,
		ConstraintFiltered: map[string]int{"${attr.kernel.name} = linux": 1},
		DimensionExhausted: map[string]int{"devices: nvidia/gpu: 1 of 8 free, need 2": 2},
		ScoreMetaData: []*structs.NodeScoreMeta{
			{NodeID: nodeID, Scores: map[string]float64{"binpack": 0.9, "fragmentation": 0.8, "job-anti-affinity": 0}, NormScore: 0.5667},
		},
	}
	for i, score := range []float64{0.5, 0.4, 0.3, 0.2, 0.1} {
		m.ScoreMetaData = append(m.ScoreMetaData, &structs.NodeScoreMeta{
			NodeID:    fmt.Sprintf("a%d000000-0000-4000-8000-000000000000", i+2),
			Scores:    map[string]float64{"binpack": score, "fragmentation": score, "job-anti-affinity": 0},
			NormScore: score * 2 / 3,
		})
	}
	return m
}
