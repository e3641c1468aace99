package command

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// registerAnswer makes the fake agent accept a job and answer its
// evaluation pending on the first read and final afterwards.
func registerAnswer(f *fakeAgent, final *structs.Evaluation, allocs []*structs.AllocListStub) *atomic.Int32 {
	var reads atomic.Int32
	f.on("PUT /v1/jobs", &structs.JobRegisterResponse{EvalID: final.ID, EvalCreateIndex: 15})
	f.onFunc("GET /v1/evaluation/"+final.ID, func(r *http.Request) (int, any) {
		if reads.Add(1) == 1 {
			return http.StatusOK, &structs.Evaluation{ID: final.ID, Status: structs.EvalStatusPending, CreateIndex: 15}
		}
		return http.StatusOK, final
	})
	f.on("GET /v1/evaluation/"+final.ID+"/allocations", allocs)
	return &reads
}

func TestJobRunPlaced(t *testing.T) {
	f, addr := newFakeAgent(t)
	allocs := testAllocs()
	final := &structs.Evaluation{ID: evalID1, Status: structs.EvalStatusComplete, CreateIndex: 15}
	reads := registerAnswer(f, final, []*structs.AllocListStub{allocs[0].Stub()})

	code, stdout, stderr := run(t, addr, "job", "run", "testdata/good.hcl")
	if code != 0 {
		t.Fatalf("exit = %d, want 0; stderr %q", code, stderr)
	}
	for _, want := range []string{
		`==> Evaluation "e1e1e1e1" created for job "train"`,
		`Evaluation status changed: "pending" -> "complete"`,
		"Allocation 1a2b3c4d created: node 5e6f7a8b, group train, GPUs " + gpu0 + "," + gpu1,
		`==> Evaluation "e1e1e1e1" finished with status "complete"`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout = %q, want it to contain %q", stdout, want)
		}
	}
	if reads.Load() != 2 {
		t.Errorf("evaluation read %d times, want 2 (one blocking query after the first)", reads.Load())
	}
	var blocking bool
	for _, r := range f.requests() {
		if strings.HasPrefix(r, "GET /v1/evaluation/"+evalID1+"?") && strings.Contains(r, "index=10") && strings.Contains(r, "wait=") {
			blocking = true
		}
	}
	if !blocking {
		t.Errorf("requests %v: want an evaluation read blocking on index=10 with a wait", f.requests())
	}
}

func TestJobRunNotPlaced(t *testing.T) {
	f, addr := newFakeAgent(t)
	final := &structs.Evaluation{ID: evalID1, Status: structs.EvalStatusComplete, CreateIndex: 15,
		FailedTGAllocs: gpuFailure(), BlockedEval: evalID2}
	registerAnswer(f, final, nil)

	code, stdout, stderr := run(t, addr, "job", "run", "testdata/good.hcl")
	if code != 2 {
		t.Fatalf("exit = %d, want 2 (registered, not placed); stderr %q", code, stderr)
	}
	for _, want := range []string{
		`Task Group "train" (failed to place 2 allocations):`,
		"* Constraint `${device.attr.memory} >= 100 GiB` filtered 1 node",
		"* Resources exhausted on 1 node: devices: nvidia/gpu: 2 of 8 free, need 5",
		`Evaluation "b10cb10c" waiting for additional capacity to place remainder`,
		"waiting for GPUs",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout = %q, want it to contain %q", stdout, want)
		}
	}
}

func TestJobRunEvalFailed(t *testing.T) {
	f, addr := newFakeAgent(t)
	final := &structs.Evaluation{ID: evalID1, Status: structs.EvalStatusFailed, StatusDescription: "maximum attempts reached", CreateIndex: 15}
	registerAnswer(f, final, nil)
	code, stdout, _ := run(t, addr, "job", "run", "testdata/good.hcl")
	if code != 2 || !strings.Contains(stdout, `finished with status "failed": maximum attempts reached`) {
		t.Errorf("exit %d, stdout %q; want 2 and the failure", code, stdout)
	}
}

func TestJobRunDetach(t *testing.T) {
	for _, flag := range []string{"-detach", "--detach"} {
		t.Run(flag, func(t *testing.T) {
			f, addr := newFakeAgent(t)
			f.on("PUT /v1/jobs", &structs.JobRegisterResponse{EvalID: evalID1})
			code, stdout, stderr := run(t, addr, "job", "run", flag, "testdata/good.hcl")
			if code != 0 || !strings.Contains(stdout, "Evaluation ID: "+evalID1) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and the evaluation ID", code, stdout, stderr)
			}
			for _, r := range f.requests() {
				if strings.Contains(r, "/v1/evaluation/") {
					t.Errorf("detached run read %s; want no monitoring", r)
				}
			}
		})
	}
}

func TestJobRunRefused(t *testing.T) {
	f, addr := newFakeAgent(t)
	f.onFunc("PUT /v1/jobs", func(*http.Request) (int, any) {
		return http.StatusBadRequest, "invalid job: group \"train\": missing task"
	})
	code, _, stderr := run(t, addr, "job", "run", "testdata/good.hcl")
	if code != 1 || !strings.Contains(stderr, "Unexpected response code: 400 (invalid job") {
		t.Errorf("exit %d, stderr %q; want 1 with the agent's message", code, stderr)
	}
}

func TestAllocLines(t *testing.T) {
	allocs := testAllocs()
	eval := &structs.Evaluation{ID: evalID1, CreateIndex: 19}
	stopped := allocs[1].Stub()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	got := allocLines(eval, []*structs.AllocListStub{stopped, allocs[0].Stub()}, false)
	want := []string{
		"Allocation 1a2b3c4d created: node 5e6f7a8b, group train, GPUs " + gpu0 + "," + gpu1,
		"Allocation 9f8e7d6c stopped: node 5e6f7a8b, group train, GPUs " + gpu2,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestJobRunOddEvalAnswers: an evaluation read that answers about another
// evaluation (or none) ends the monitor with an error instead of waiting
// forever for a status, and a registration without an evaluation has
// nothing to follow.
func TestJobRunOddEvalAnswers(t *testing.T) {
	t.Run("other evaluation", func(t *testing.T) {
		f, addr := newFakeAgent(t)
		f.on("PUT /v1/jobs", &structs.JobRegisterResponse{EvalID: evalID1})
		f.on("GET /v1/evaluation/"+evalID1, &structs.Evaluation{})
		done := make(chan struct{})
		var code int
		var stderr string
		go func() {
			defer close(done)
			code, _, stderr = run(t, addr, "job", "run", "testdata/good.hcl")
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("job run still monitoring an evaluation the agent does not describe")
		}
		if code != 1 || !strings.Contains(stderr, `answered with evaluation ""`) {
			t.Errorf("exit %d, stderr %q; want 1 and the mismatch", code, stderr)
		}
	})
	t.Run("no evaluation", func(t *testing.T) {
		f, addr := newFakeAgent(t)
		f.on("PUT /v1/jobs", &structs.JobRegisterResponse{})
		code, stdout, stderr := run(t, addr, "job", "run", "testdata/good.hcl")
		if code != 0 || !strings.Contains(stdout, "no evaluation was created") {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0 and no monitoring", code, stdout, stderr)
		}
		for _, r := range f.requests() {
			if strings.Contains(r, "/v1/evaluation") {
				t.Errorf("read %s; want no evaluation read", r)
			}
		}
	})
}
