package command

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/<name>.golden, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	got += "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update and review the diff)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestGPURows(t *testing.T) {
	rows := gpuRows(testNode(), testAllocs())
	tests := []struct {
		uuid        string
		wantHealthy bool
		wantHeldBy  string
	}{
		{gpu0, true, allocID1},
		{gpu1, true, allocID1},
		{gpu2, true, ""}, // its allocation is complete: free again
		{gpu3, false, ""},
	}
	if len(rows) != len(tests) {
		t.Fatalf("got %d rows, want %d", len(rows), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.uuid, func(t *testing.T) {
			r := rows[i]
			held := ""
			if r.HeldBy != nil {
				held = r.HeldBy.ID
			}
			if r.UUID != tt.uuid || r.Healthy != tt.wantHealthy || held != tt.wantHeldBy {
				t.Errorf("row %d = %s healthy %v held by %q; want %s healthy %v held by %q", i, r.UUID, r.Healthy, held, tt.uuid, tt.wantHealthy, tt.wantHeldBy)
			}
			if r.Memory != "80 GiB" || r.Model != "NVIDIA H100 80GB HBM3" {
				t.Errorf("row %d model/memory = %q/%q, want the group's", i, r.Model, r.Memory)
			}
		})
	}
}

func TestGPUTableText(t *testing.T) {
	out := formatGPUTable(gpuRows(testNode(), testAllocs()), false)
	lines := strings.Split(out, "\n")
	want := map[string][]string{
		gpu0: {"healthy", "held by 1a2b3c4d (train.train[0])"},
		gpu2: {"healthy", "free"},
		gpu3: {"unhealthy: Xid 79", "free"},
	}
	for uuid, parts := range want {
		var line string
		for _, l := range lines {
			if strings.Contains(l, uuid) {
				line = l
			}
		}
		for _, p := range parts {
			if !strings.Contains(line, p) {
				t.Errorf("GPU %s line = %q, want it to contain %q", uuid, line, p)
			}
		}
	}
}

func TestPlacementFailures(t *testing.T) {
	tests := []struct {
		name   string
		failed map[string]*structs.AllocMetric
		want   []string
	}{
		{
			name:   "gpus exhausted and constraint",
			failed: gpuFailure(),
			want: []string{
				`Task Group "train" (failed to place 2 allocations):`,
				"  * 2 nodes evaluated: 1 filtered, 1 exhausted",
				"  * Constraint `${device.attr.memory} >= 100 GiB` filtered 1 node",
				"  * Resources exhausted on 1 node: devices: nvidia/gpu: 2 of 8 free, need 5",
			},
		},
		{
			name:   "no nodes",
			failed: map[string]*structs.AllocMetric{"g": {NodesAvailable: map[string]int{"dc2": 0}}},
			want: []string{
				`Task Group "g" (failed to place 1 allocation):`,
				"  * No nodes were eligible for evaluation",
				`  * No nodes are available in datacenter "dc2"`,
			},
		},
		{
			name: "exhausted without dimension and class",
			failed: map[string]*structs.AllocMetric{"g": {NodesEvaluated: 3, NodesExhausted: 3,
				DimensionExhausted: map[string]int{"memory": 1}, ClassFiltered: map[string]int{"cpu-only": 2}}},
			want: []string{
				`Task Group "g" (failed to place 1 allocation):`,
				"  * 3 nodes evaluated: 0 filtered, 3 exhausted",
				`  * Class "cpu-only" filtered 2 nodes`,
				"  * Resources exhausted on 1 node: memory",
				"  * Resources exhausted on 2 nodes",
			},
		},
		{
			name:   "groups in order",
			failed: map[string]*structs.AllocMetric{"b": {NodesEvaluated: 1}, "a": {NodesEvaluated: 1}},
			want: []string{
				`Task Group "a" (failed to place 1 allocation):`, "  * 1 node evaluated: 0 filtered, 0 exhausted",
				`Task Group "b" (failed to place 1 allocation):`, "  * 1 node evaluated: 0 filtered, 0 exhausted",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := placementFailures(tt.failed)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestGPUWait(t *testing.T) {
	tests := []struct {
		name        string
		failed      map[string]*structs.AllocMetric
		busy, short bool
	}{
		{"GPUs held", map[string]*structs.AllocMetric{"g": {DimensionExhausted: map[string]int{"devices: nvidia/gpu: 0 of 4 free, need 2": 1}}}, true, false},
		{"too few on every node", map[string]*structs.AllocMetric{"g": {DimensionExhausted: map[string]int{"devices: nvidia/gpu: node has 4 matching, need 5": 2}}}, false, true},
		{"both", map[string]*structs.AllocMetric{"g": {DimensionExhausted: map[string]int{"devices: nvidia/gpu: node has 4 matching, need 8": 1, "devices: nvidia/gpu: 2 of 8 free, need 8": 1}}}, true, true},
		{"device constraint", map[string]*structs.AllocMetric{"g": {ConstraintFiltered: map[string]int{"${device.model} = A100": 1}}}, false, true},
		{"memory only", map[string]*structs.AllocMetric{"g": {DimensionExhausted: map[string]int{"memory": 1}}}, false, false},
		{"nil metric", map[string]*structs.AllocMetric{"g": nil}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			busy, short := gpuWait(tt.failed)
			if busy != tt.busy || short != tt.short {
				t.Errorf("gpuWait = (%v, %v), want (%v, %v)", busy, short, tt.busy, tt.short)
			}
		})
	}
}

func TestPendingPlacement(t *testing.T) {
	complete := &structs.Evaluation{ID: "c", Status: structs.EvalStatusComplete, CreateIndex: 5, FailedTGAllocs: gpuFailure(), BlockedEval: "b"}
	blocked := &structs.Evaluation{ID: "b", Status: structs.EvalStatusBlocked, CreateIndex: 6}
	placed := &structs.Evaluation{ID: "p", Status: structs.EvalStatusComplete, CreateIndex: 9}
	failedNoBlock := &structs.Evaluation{ID: "f", Status: structs.EvalStatusComplete, CreateIndex: 9, FailedTGAllocs: gpuFailure()}
	tests := []struct {
		name        string
		evals       []*structs.Evaluation
		wantFailed  bool
		wantBlocked string
	}{
		{"blocked uses its creator's reasons", []*structs.Evaluation{complete, blocked}, true, "b"},
		{"blocked with own reasons", []*structs.Evaluation{{ID: "b2", Status: structs.EvalStatusBlocked, FailedTGAllocs: gpuFailure()}}, true, "b2"},
		{"all placed", []*structs.Evaluation{complete, placed}, false, ""},
		{"latest failed without blocked eval", []*structs.Evaluation{complete, failedNoBlock}, true, ""},
		{"none", nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed, b := pendingPlacement(latestFirst(tt.evals))
			gotBlocked := ""
			if b != nil {
				gotBlocked = b.ID
			}
			if (len(failed) > 0) != tt.wantFailed || gotBlocked != tt.wantBlocked {
				t.Errorf("pendingPlacement = %d failures, blocked %q; want failures %v, blocked %q", len(failed), gotBlocked, tt.wantFailed, tt.wantBlocked)
			}
		})
	}
}

func TestFormatAgo(t *testing.T) {
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{12 * time.Second, "12s ago"},
		{5*time.Minute + 3*time.Second, "5m3s ago"},
		{2*time.Hour + 7*time.Minute, "2h7m ago"},
		{76 * time.Hour, "3d4h ago"},
		{-time.Second, "just now"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := formatAgo(testNow, testNow.Add(-tt.ago).UnixNano()); got != tt.want {
				t.Errorf("formatAgo(-%v) = %q, want %q", tt.ago, got, tt.want)
			}
		})
	}
	if got := formatAgo(testNow, 0); got != "<none>" {
		t.Errorf("formatAgo(0) = %q, want <none>", got)
	}
}

func TestShortGPU(t *testing.T) {
	tests := []struct{ in, want string }{
		{gpu0, "GPU-00000000"},
		{"MIG-abcdef0123-4", "MIG-abcdef01"},
		{"sim-0", "sim-0"},
	}
	for _, tt := range tests {
		if got := shortGPU(tt.in, false); got != tt.want {
			t.Errorf("shortGPU(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := shortGPU(tt.in, true); got != tt.in {
			t.Errorf("shortGPU(%q, verbose) = %q, want it unchanged", tt.in, got)
		}
	}
}

func TestFormatScore(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{{math.Copysign(0, -1), "0"}, {0.5234, "0.523"}, {-0.25, "-0.25"}, {1, "1"}}
	for _, tt := range tests {
		if got := formatScore(tt.in); got != tt.want {
			t.Errorf("formatScore(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatTableAligns(t *testing.T) {
	got := formatTable([]string{"ID", "Name"}, [][]string{{"a", "long-name"}, {"abcdef", "x"}})
	want := "ID      Name\na       long-name\nabcdef  x"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestJobStatusGolden(t *testing.T) {
	allocs := testAllocs()
	stubs := []*structs.AllocListStub{allocs[0].Stub(), allocs[1].Stub()}
	st := &jobStatus{
		Job:     testJob(),
		Summary: &structs.JobSummary{JobID: "train", Summary: map[string]structs.TaskGroupSummary{"train": {Running: 1, Complete: 1, Queued: 2}}},
		Evaluations: []*structs.Evaluation{
			{ID: evalID1, Status: structs.EvalStatusComplete, TriggeredBy: structs.EvalTriggerJobRegister, CreateIndex: 15, CreateTime: hourAgo, FailedTGAllocs: gpuFailure(), BlockedEval: evalID2},
			{ID: evalID2, Status: structs.EvalStatusBlocked, TriggeredBy: structs.EvalTriggerQueuedAllocs, CreateIndex: 16, CreateTime: hourAgo, FailedTGAllocs: gpuFailure()},
		},
		Allocations: stubs,
	}
	golden(t, "job_status", formatJobStatus(testNow, st, false))
}

func TestJobListGolden(t *testing.T) {
	jobs := []*structs.JobListStub{testJob().Stub(nil), {ID: "old", Type: "service", Priority: 70, Status: "dead", Stop: true, SubmitTime: hourAgo}}
	golden(t, "job_list", formatJobList(jobs))
}

func TestNodeGolden(t *testing.T) {
	golden(t, "node_status", formatNode(testNow, testNode(), testAllocs(), false))
	golden(t, "node_list", formatNodeList([]*structs.NodeListStub{testNode().Stub()}, false))
}

func TestAllocGolden(t *testing.T) {
	golden(t, "alloc_status", formatAlloc(testNow, testAllocs()[0], false))
	golden(t, "alloc_status_complete", formatAlloc(testNow, testAllocs()[1], false))
}

func TestEventDescription(t *testing.T) {
	tests := []struct {
		e    structs.TaskEvent
		want string
	}{
		{structs.TaskEvent{Type: structs.TaskStarted, Message: "started"}, "started"},
		{structs.TaskEvent{Type: structs.TaskStarted, Message: "m", DisplayMessage: "d"}, "d"},
		{structs.TaskEvent{Type: structs.TaskTerminated, ExitCode: 3}, "Exit Code: 3"},
		{structs.TaskEvent{Type: structs.TaskTerminated, ExitCode: 137, Signal: 9, DisplayMessage: "OOM"}, "Exit Code: 137, Signal: 9, OOM"},
		{structs.TaskEvent{Type: structs.TaskTerminated, ExitCode: 1, DisplayMessage: "Exit Code: 1"}, "Exit Code: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := eventDescription(&tt.e); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMetricReasonsGang(t *testing.T) {
	// A group that fitted but waits for its gang says only that.
	got := metricReasons(&structs.AllocMetric{Gang: `gang "ddp": group "ps" would have 0 of the 1 allocations it needs together`})
	want := []string{`Waiting as a gang: gang "ddp": group "ps" would have 0 of the 1 allocations it needs together`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFormatPlanPreemptions(t *testing.T) {
	resp := &structs.JobPlanResponse{
		Diff:       &structs.JobDiff{Type: structs.DiffTypeAdded},
		Placements: []*structs.PlannedAlloc{{Name: "high.train[0]", TaskGroup: "train", NodeID: "5e6f7a8b-0000", NodeName: "gpu-1", GPUs: []string{"GPU-0"}}},
		Preemptions: []*structs.PlannedAlloc{{JobID: "low", Name: "low.work[1]", TaskGroup: "work", NodeID: "5e6f7a8b-0000",
			NodeName: "gpu-1", GPUs: []string{"GPU-0"}, Reason: "preempted by ..."}},
	}
	out := formatPlan("high", resp, nil, false)
	for _, want := range []string{"Preemptions (1):", `  ! low.work[1] (job "low") on node 5e6f7a8b (gpu-1), GPUs GPU-0`} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `Task Group: "work"`) {
		t.Errorf("the victim's group is listed as the job's own:\n%s", out)
	}
}
