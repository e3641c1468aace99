package server

import (
	"errors"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestJobVersionsRevertStable: versions list newest first with diffs,
// revert registers the old spec as a new version (check-and-set with
// EnforcePriorVersion), stability is set through Raft, and read-only
// tokens may list but not revert.
func TestJobVersionsRevertStable(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	job := gpuJob("web", structs.JobTypeService, 1, 0)
	reg := func(j *structs.Job) {
		t.Helper()
		req := &structs.JobRegisterRequest{Job: j}
		req.AuthToken = mgmt
		call(t, s, structs.RPCJobRegister, req, &structs.JobRegisterResponse{})
	}
	reg(job)
	v1 := job.Copy()
	v1.TaskGroups[0].Count = 2
	reg(v1)

	versionsReq := &structs.JobVersionsRequest{JobID: "web", Diffs: true}
	versionsReq.AuthToken = mgmt
	var vr structs.JobVersionsResponse
	call(t, s, structs.RPCJobVersions, versionsReq, &vr)
	if len(vr.Versions) != 2 || vr.Versions[0].Version != 1 || len(vr.Diffs) != 1 || vr.Diffs[0].Type != structs.DiffTypeEdited ||
		len(vr.Diffs[0].Fields) != 1 || vr.Diffs[0].Fields[0].Name != `TaskGroups["train"].Count` || vr.Diffs[0].Fields[0].New != "2" {
		t.Fatalf("versions %d, diffs %+v; want 2 and the count's change", len(vr.Versions), vr.Diffs)
	}

	reader := clientToken(t, s, mgmt, "reader", `namespace "default" { policy = "read" }`)
	versionsReq.AuthToken = reader.SecretID
	if err := s.RPC(structs.RPCJobVersions, versionsReq, &structs.JobVersionsResponse{}); err != nil {
		t.Errorf("versions with a read token: %v", err)
	}
	revert := &structs.JobRevertRequest{JobID: "web", JobVersion: 0}
	revert.AuthToken = reader.SecretID
	if err := s.RPC(structs.RPCJobRevert, revert, &structs.JobRegisterResponse{}); !isDenied(err) {
		t.Errorf("revert with a read token: %v, want permission denied", err)
	}

	revert.AuthToken = mgmt
	revert.EnforcePriorVersion = ptr(uint64(0))
	if err := s.RPC(structs.RPCJobRevert, revert, &structs.JobRegisterResponse{}); !errors.Is(err, structs.ErrConflict) {
		t.Errorf("revert enforcing a stale version: %v, want conflict", err)
	}
	revert.EnforcePriorVersion = ptr(uint64(1))
	var rr structs.JobRegisterResponse
	call(t, s, structs.RPCJobRevert, revert, &rr)
	cur := storedJob(t, s, "web")
	if cur.Version != 2 || cur.TaskGroups[0].Count != 1 || rr.EvalID == "" {
		t.Errorf("after revert: version %d count %d eval %q; want version 2 with count 1 and an eval", cur.Version, cur.TaskGroups[0].Count, rr.EvalID)
	}
	revert.EnforcePriorVersion, revert.JobVersion = nil, 2
	if err := s.RPC(structs.RPCJobRevert, revert, &structs.JobRegisterResponse{}); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("revert to the current version: %v, want invalid", err)
	}
	revert.JobVersion = 42
	if err := s.RPC(structs.RPCJobRevert, revert, &structs.JobRegisterResponse{}); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("revert to an unknown version: %v, want not found", err)
	}

	stable := &structs.JobStabilityRequest{JobID: "web", JobVersion: 2, Stable: true}
	stable.AuthToken = reader.SecretID
	if err := s.RPC(structs.RPCJobStable, stable, &structs.JobStabilityResponse{}); !isDenied(err) {
		t.Errorf("stable with a read token: %v, want permission denied", err)
	}
	stable.AuthToken = mgmt
	call(t, s, structs.RPCJobStable, stable, &structs.JobStabilityResponse{})
	if cur = storedJob(t, s, "web"); !cur.Stable {
		t.Error("job not stable after Job.Stable")
	}
	stable.JobVersion = 42
	if err := s.RPC(structs.RPCJobStable, stable, &structs.JobStabilityResponse{}); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("stable of an unknown version: %v, want not found", err)
	}
}
