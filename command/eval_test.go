package command

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// serveShapes answers what eval, job allocs, job scale and -t need.
func serveShapes(f *fakeAgent) {
	serveJob(f)
	f.onFunc("GET /v1/jobs", func(r *http.Request) (int, any) {
		if p := r.URL.Query().Get("prefix"); !strings.HasPrefix("train", p) {
			return http.StatusOK, []*structs.JobListStub{}
		}
		stub := testJob().Stub(nil)
		stub.CreateIndex = 10
		return http.StatusOK, []*structs.JobListStub{stub}
	})
	evals := []*structs.Evaluation{
		{ID: evalID1, JobID: "train", Namespace: "default", Priority: 50, TriggeredBy: "job-register", Status: structs.EvalStatusComplete,
			CreateIndex: 15, FailedTGAllocs: gpuFailure(), BlockedEval: evalID2, QueuedAllocations: map[string]int{"train": 1}},
		{ID: evalID2, JobID: "train", Namespace: "default", Priority: 50, TriggeredBy: "queued-allocs", Status: structs.EvalStatusBlocked, CreateIndex: 16},
	}
	f.on("GET /v1/job/train/evaluations", evals)
	f.onFunc("GET /v1/evaluations", func(r *http.Request) (int, any) {
		var out []*structs.Evaluation
		for _, e := range evals {
			if strings.HasPrefix(e.ID, r.URL.Query().Get("prefix")) {
				out = append(out, e)
			}
		}
		return http.StatusOK, out
	})
	job := testJob()
	job.CreateIndex = 10
	f.on("GET /v1/job/train", job)
	old := testAllocs()[1].Stub()
	old.CreateIndex = 5 // of an earlier job of the same ID
	f.on("GET /v1/job/train/allocations", []*structs.AllocListStub{testAllocs()[0].Stub(), old})
}

func TestEvalAndJobShapeCommands(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantNot  []string
	}{
		{name: "eval list", args: []string{"eval", "list"}, wantOut: []string{"Placement Failures", "job-register", "queued-allocs"}},
		{name: "eval list -status", args: []string{"eval", "list", "-status", "blocked"}, wantOut: []string{"queued-allocs"}, wantNot: []string{"job-register"}},
		{name: "eval list -job -json", args: []string{"eval", "list", "-job", "train", "-json"}, wantOut: []string{`"TriggeredBy": "queued-allocs"`}},
		{name: "eval list -t", args: []string{"eval", "list", "-t", "{{range .}}{{.Status}};{{end}}"}, wantOut: []string{"blocked;complete;"}},
		{name: "eval status reasons", args: []string{"eval", "status", evalID1[:6]},
			wantOut: []string{"Failed Placements", "devices: nvidia/gpu: 2 of 8 free, need 5", "${device.attr.memory} >= 100 GiB", "Queued Allocations"}},
		{name: "eval status -t", args: []string{"eval", "status", "-t", "{{.JobID}}/{{.Status}}", evalID2}, wantOut: []string{"train/blocked"}},
		{name: "eval status unknown", args: []string{"eval", "status", "ffff"}, wantCode: 1, wantOut: []string{`No evaluation(s) with prefix or ID "ffff"`}},
		{name: "job allocs: the current instance", args: []string{"job", "allocs", "tr"}, wantOut: []string{allocID1[:8]}, wantNot: []string{allocID2[:8]}},
		{name: "job allocs -all", args: []string{"job", "allocs", "-all", "train"}, wantOut: []string{allocID1[:8], allocID2[:8]}},
		{name: "job status hides older instances", args: []string{"job", "status", "train"}, wantOut: []string{allocID1[:8]}, wantNot: []string{allocID2[:8]}},
		{name: "job status -all-allocs", args: []string{"job", "status", "-all-allocs", "train"}, wantOut: []string{allocID1[:8], allocID2[:8]}},
		{name: "job status -t", args: []string{"job", "status", "-t", "{{.Job.ID}} {{len .Allocations}}", "train"}, wantOut: []string{"train 1"}},
		{name: "bad template", args: []string{"job", "status", "-t", "{{.Nope", "train"}, wantCode: 1, wantOut: []string{"Error formatting with -t"}},
		{name: "-json and -t", args: []string{"job", "status", "-json", "-t", "x", "train"}, wantCode: 1, wantOut: []string{"Both -json and -t"}},
		{name: "node status -t", args: []string{"node", "status", "-t", "{{range .}}{{.Name}}{{end}}"}, wantOut: []string{"gpu-node-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := newFakeAgent(t)
			serveShapes(f)
			f.on("GET /v1/nodes", []*structs.NodeListStub{testNode().Stub()})
			code, stdout, stderr := run(t, addr, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit = %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output = %q, want it to contain %q", stdout+stderr, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(stdout+stderr, w) {
					t.Errorf("output = %q, want no %q", stdout+stderr, w)
				}
			}
		})
	}
}

func TestJobScale(t *testing.T) {
	f, addr := newFakeAgent(t)
	serveShapes(f)
	var got map[string]any
	f.onFunc("PUT /v1/job/train/scale", func(r *http.Request) (int, any) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got)
		return http.StatusOK, &structs.JobRegisterResponse{EvalID: evalID2}
	})
	code, stdout, stderr := run(t, addr, "job", "scale", "tr", "3")
	if code != 0 || !strings.Contains(stdout, `group "train" scaled to 3`) || !strings.Contains(stdout, evalID2) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if tgt, _ := got["Target"].(map[string]any); got["Count"] != float64(3) || tgt["Group"] != "train" {
		t.Errorf("body = %v, want Count 3 and Target.Group train", got)
	}
	for _, args := range [][]string{{"job", "scale", "train", "-1"}, {"job", "scale", "train"}, {"job", "scale", "train", "g", "x"}} {
		if code, _, _ := run(t, addr, args...); code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
	}
}
