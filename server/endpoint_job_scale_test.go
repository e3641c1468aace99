package server

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/droverhq/drover/structs"
)

func scale(s *Server, req *structs.JobScaleRequest) (*structs.JobRegisterResponse, error) {
	var resp structs.JobRegisterResponse
	err := s.RPC(structs.RPCJobScale, req, &resp)
	return &resp, err
}

func storedJob(t *testing.T, s *Server, id string) *structs.Job {
	t.Helper()
	job, err := s.State().JobByID(nil, structs.DefaultNamespace, id)
	if err != nil || job == nil {
		t.Fatalf("job %q: %v, %v", id, job, err)
	}
	return job
}

func ptr[T any](v T) *T { return &v }

// TestJobScale: Job.Scale sets the group's count (a stopped job runs
// again) with a new evaluation, checks its input, and with EnforceIndex
// applies only at the job's current JobModifyIndex.
func TestJobScale(t *testing.T) {
	s := startServer(t, testConfig(t))
	reg := registerJob(t, s, gpuJob("train", structs.JobTypeBatch, 1, 0))
	var dereg structs.JobDeregisterResponse
	call(t, s, structs.RPCJobDeregister, &structs.JobDeregisterRequest{JobID: "train"}, &dereg)
	stopped := storedJob(t, s, "train")

	resp, err := scale(s, &structs.JobScaleRequest{JobID: "train", Group: "train", Count: ptr(3), Message: "more",
		EnforceIndex: true, JobModifyIndex: stopped.JobModifyIndex})
	if err != nil {
		t.Fatalf("Job.Scale: %v", err)
	}
	job := storedJob(t, s, "train")
	if job.TaskGroups[0].Count != 3 || job.Stop || resp.JobModifyIndex != job.JobModifyIndex || resp.Index != resp.EvalCreateIndex ||
		resp.Index <= dereg.Index || job.Version != stopped.Version+1 {
		t.Errorf("after scale: count %d stop %t version %d, reply %+v; want 3, running, a new version and the register reply", job.TaskGroups[0].Count, job.Stop, job.Version, resp)
	}
	if e := evalByID(t, s, resp.EvalID); e == nil || e.JobID != "train" || e.TriggeredBy != structs.EvalTriggerJobRegister {
		t.Errorf("scale's evaluation: %+v", e)
	}
	if reg.JobModifyIndex >= job.JobModifyIndex {
		t.Errorf("JobModifyIndex %d did not move on from %d", job.JobModifyIndex, reg.JobModifyIndex)
	}

	tests := []struct {
		name string
		req  *structs.JobScaleRequest
		want error
		text string
	}{
		{"no count", &structs.JobScaleRequest{JobID: "train", Group: "train"}, structs.ErrInvalid, "scale: Count must be given and not negative"},
		{"negative count", &structs.JobScaleRequest{JobID: "train", Group: "train", Count: ptr(-1)}, structs.ErrInvalid, "scale: Count must be given and not negative"},
		{"no group", &structs.JobScaleRequest{JobID: "train", Count: ptr(1)}, structs.ErrInvalid, "scale: Target.Group is required"},
		{"unknown group", &structs.JobScaleRequest{JobID: "train", Group: "nope", Count: ptr(1)}, structs.ErrInvalid, `scale: job "train" has no group "nope"`},
		{"unknown job", &structs.JobScaleRequest{JobID: "ghost", Group: "train", Count: ptr(1)}, structs.ErrNotFound, `job "ghost" not found`},
		{"other namespace", &structs.JobScaleRequest{JobID: "train", Group: "train", Count: ptr(1), WriteRequest: structs.WriteRequest{Namespace: "team-a"}},
			structs.ErrNotFound, `job "train" not found`},
		{"stale index", &structs.JobScaleRequest{JobID: "train", Group: "train", Count: ptr(1), EnforceIndex: true, JobModifyIndex: stopped.JobModifyIndex},
			structs.ErrConflict, fmt.Sprintf("enforcing job modify index %d: job exists with conflicting job modify index: %d", stopped.JobModifyIndex, job.JobModifyIndex)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scale(s, tt.req)
			if !errors.Is(err, tt.want) || err.Error() != tt.text {
				t.Errorf("got %v, want %q (%v)", err, tt.text, tt.want)
			}
			if after := storedJob(t, s, "train"); after.ModifyIndex != job.ModifyIndex {
				t.Errorf("the refused scale changed the job (ModifyIndex %d, was %d)", after.ModifyIndex, job.ModifyIndex)
			}
		})
	}
}

// TestJobRegister_EnforceIndex: a check-and-set registration applies at
// the job's JobModifyIndex (0 for a new job) and is refused with
// ErrConflict and Nomad's text otherwise.
func TestJobRegister_EnforceIndex(t *testing.T) {
	s := startServer(t, testConfig(t))
	register := func(count int, want uint64) (*structs.JobRegisterResponse, error) {
		var resp structs.JobRegisterResponse
		err := s.RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: gpuJob("cas", structs.JobTypeBatch, count, 0),
			EnforceIndex: true, JobModifyIndex: want}, &resp)
		return &resp, err
	}
	if _, err := register(1, 7); !errors.Is(err, structs.ErrConflict) || err.Error() != "enforcing job modify index 7: job does not exist" {
		t.Errorf("index 7 for a new job: %v, want the conflict", err)
	}
	first, err := register(1, 0)
	if err != nil {
		t.Fatalf("index 0 for a new job: %v", err)
	}
	_, err = register(2, 0)
	if want := fmt.Sprintf("enforcing job modify index 0: job exists with conflicting job modify index: %d", first.JobModifyIndex); !errors.Is(err, structs.ErrConflict) || err.Error() != want {
		t.Errorf("index 0 for an existing job: %v, want %q", err, want)
	}
	second, err := register(2, first.JobModifyIndex)
	if err != nil || second.JobModifyIndex <= first.JobModifyIndex || storedJob(t, s, "cas").TaskGroups[0].Count != 2 {
		t.Errorf("register at the current index: %+v, %v; want count 2 at a new JobModifyIndex", second, err)
	}
}

// TestJobCAS_ConcurrentWritersOneWins: writers that race with the same
// JobModifyIndex, scaling or registering a different spec each, are
// decided in the FSM: exactly one wins, the others get ErrConflict, and
// the stored spec is the winner's.
func TestJobCAS_ConcurrentWritersOneWins(t *testing.T) {
	s := startServer(t, testConfig(t))
	for round := range 3 {
		base := storedJobOrRegister(t, s, "race")
		const writers = 6
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Go(func() {
				count := 10*round + i + 2 // each writer wants its own count
				if i%2 == 0 {
					_, errs[i] = scale(s, &structs.JobScaleRequest{JobID: "race", Group: "train", Count: &count,
						EnforceIndex: true, JobModifyIndex: base.JobModifyIndex})
					return
				}
				errs[i] = s.RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: gpuJob("race", structs.JobTypeBatch, count, 0),
					EnforceIndex: true, JobModifyIndex: base.JobModifyIndex}, &structs.JobRegisterResponse{})
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("round %d: writers %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, structs.ErrConflict):
				t.Errorf("round %d: writer %d: %v, want a conflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won: %v", round, errs)
		}
		if got, want := storedJob(t, s, "race").TaskGroups[0].Count, 10*round+winner+2; got != want {
			t.Errorf("round %d: stored count %d, want the winner's %d", round, got, want)
		}
	}
}

func storedJobOrRegister(t *testing.T, s *Server, id string) *structs.Job {
	t.Helper()
	if job, _ := s.State().JobByID(nil, structs.DefaultNamespace, id); job != nil {
		return job
	}
	registerJob(t, s, gpuJob(id, structs.JobTypeBatch, 1, 0))
	return storedJob(t, s, id)
}

// TestJobScale_NoLostUpdate: a scale without EnforceIndex that races a
// registration never puts back the spec the registration replaced: its
// read-modify-write is check-and-set, retried on a fresh read when it
// loses.
func TestJobScale_NoLostUpdate(t *testing.T) {
	s := startServer(t, testConfig(t))
	registerJob(t, s, gpuJob("web", structs.JobTypeBatch, 1, 0))
	for round := range 10 {
		next := gpuJob("web", structs.JobTypeBatch, 1, 0)
		next.Meta = map[string]string{"round": fmt.Sprint(round)}
		var wg sync.WaitGroup
		var scaleErr error
		wg.Go(func() { registerJob(t, s, next) })
		wg.Go(func() {
			_, scaleErr = scale(s, &structs.JobScaleRequest{JobID: "web", Group: "train", Count: ptr(round + 2)})
		})
		wg.Wait()
		if scaleErr != nil {
			t.Fatalf("round %d: scale: %v", round, scaleErr)
		}
		job := storedJob(t, s, "web")
		if job.Meta["round"] != fmt.Sprint(round) {
			t.Fatalf("round %d: stored meta %v: the scale overwrote the registration", round, job.Meta)
		}
		if c := job.TaskGroups[0].Count; c != 1 && c != round+2 {
			t.Errorf("round %d: count %d, want the registration's 1 or the scale's %d", round, c, round+2)
		}
	}
}

// Scaling a job up is new work in its queue: a scale-job token without
// write on that queue may shrink the job but not grow it.
func TestJobScaleUpNeedsTheQueue(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	q := &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "prod", Weight: 10}}
	q.AuthToken = mgmt
	call(t, s, structs.RPCQueueUpsert, q, &structs.GenericResponse{})
	job := gpuJob("web", structs.JobTypeService, 2, 0)
	job.Queue = "prod"
	reg := &structs.JobRegisterRequest{Job: job}
	reg.AuthToken = mgmt
	call(t, s, structs.RPCJobRegister, reg, &structs.JobRegisterResponse{})

	scaler := clientToken(t, s, mgmt, "scaler", `namespace "default" { capabilities = ["scale-job"] }`)
	prod := clientToken(t, s, mgmt, "prod-scaler", `namespace "default" { capabilities = ["scale-job"] }
queue "prod" { policy = "write" }`)
	scale := func(token string, count int) error {
		req := &structs.JobScaleRequest{JobID: "web", Group: job.TaskGroups[0].Name, Count: &count}
		req.AuthToken = token
		return s.RPC(structs.RPCJobScale, req, &structs.JobRegisterResponse{})
	}
	if err := scale(scaler.SecretID, 5); !isDenied(err) {
		t.Errorf("scale up without the queue's write: %v, want permission denied", err)
	}
	if err := scale(scaler.SecretID, 1); err != nil {
		t.Errorf("scale down without the queue's write: %v, want it allowed", err)
	}
	if err := scale(prod.SecretID, 5); err != nil {
		t.Errorf("scale up with the queue's write: %v", err)
	}
}
