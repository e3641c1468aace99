package command

import (
	"net/http"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

func serveJob(f *fakeAgent) {
	allocs := testAllocs()
	f.on("GET /v1/jobs", []*structs.JobListStub{testJob().Stub(nil), {ID: "trainer-2", Type: "batch"}})
	f.on("GET /v1/job/train", testJob())
	f.on("GET /v1/job/train/summary", &structs.JobSummary{JobID: "train", Summary: map[string]structs.TaskGroupSummary{"train": {Running: 1}}})
	f.on("GET /v1/job/train/evaluations", []*structs.Evaluation{
		{ID: evalID1, Status: structs.EvalStatusComplete, CreateIndex: 15, FailedTGAllocs: gpuFailure(), BlockedEval: evalID2},
		{ID: evalID2, Status: structs.EvalStatusBlocked, CreateIndex: 16},
	})
	f.on("GET /v1/job/train/allocations", []*structs.AllocListStub{allocs[0].Stub()})
	f.on("DELETE /v1/job/train", &structs.JobDeregisterResponse{EvalID: evalID1})
}

func TestJobStatus(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
	}{
		{name: "list", args: nil, wantOut: []string{"ID", "Submit Date", "train", "trainer-2"}},
		{name: "list json", args: []string{"-json"}, wantOut: []string{`"ID": "trainer-2"`}},
		{name: "exact id beats prefix", args: []string{"train"}, wantOut: []string{"Placement Failure", "waiting for GPUs", "GPU-00000000,GPU-11111111"}},
		{name: "json", args: []string{"train", "-json"}, wantOut: []string{`"Evaluations": [`, `"BlockedEval": "` + evalID2}},
		{name: "ambiguous prefix", args: []string{"tr"}, wantCode: 1, wantOut: []string{`Prefix "tr" matched multiple jobs`, "trainer-2"}},
		{name: "unknown", args: []string{"zzz"}, wantCode: 1, wantOut: []string{`No job(s) with prefix or ID "zzz" found`}},
		{name: "too many args", args: []string{"a", "b"}, wantCode: 1, wantOut: []string{"at most one argument"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := newFakeAgent(t)
			serveJob(f)
			f.onFunc("GET /v1/jobs", func(r *http.Request) (int, any) {
				all := []*structs.JobListStub{testJob().Stub(nil), {ID: "trainer-2", Type: "batch"}}
				var out []*structs.JobListStub
				for _, j := range all {
					if strings.HasPrefix(j.ID, r.URL.Query().Get("prefix")) {
						out = append(out, j)
					}
				}
				return http.StatusOK, out
			})
			code, stdout, stderr := run(t, addr, append([]string{"job", "status"}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("exit = %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output = %q, want it to contain %q", stdout+stderr, w)
				}
			}
		})
	}
}

func TestJobStop(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantPurge bool
	}{
		{name: "detach", args: []string{"-detach", "train"}},
		{name: "purge after id", args: []string{"train", "--purge", "--detach"}, wantPurge: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, addr := newFakeAgent(t)
			serveJob(f)
			code, stdout, stderr := run(t, addr, append([]string{"job", "stop"}, tt.args...)...)
			if code != 0 || !strings.Contains(stdout, "Evaluation ID: "+evalID1) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and the evaluation ID", code, stdout, stderr)
			}
			var purged, deleted bool
			for _, r := range f.requests() {
				if strings.HasPrefix(r, "DELETE /v1/job/train?") {
					deleted = true
					purged = strings.Contains(r, "purge=true")
				}
			}
			if !deleted || purged != tt.wantPurge {
				t.Errorf("requests %v: want a DELETE with purge %v", f.requests(), tt.wantPurge)
			}
		})
	}
}

func TestJobStopMonitors(t *testing.T) {
	f, addr := newFakeAgent(t)
	serveJob(f)
	f.on("GET /v1/evaluation/"+evalID1, &structs.Evaluation{ID: evalID1, Status: structs.EvalStatusComplete})
	stopped := testAllocs()[0].Stub()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	f.on("GET /v1/evaluation/"+evalID1+"/allocations", []*structs.AllocListStub{stopped})
	code, stdout, stderr := run(t, addr, "job", "stop", "train")
	if code != 0 || !strings.Contains(stdout, "Allocation 1a2b3c4d stopped") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and the stopped allocation", code, stdout, stderr)
	}
}
