package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func paramJob(id, payload string, required, optional []string) *structs.Job {
	job := gpuJob(id, structs.JobTypeBatch, 1, 0)
	job.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: payload, MetaRequired: required, MetaOptional: optional}
	job.TaskGroups[0].Tasks[0].DispatchPayload = &structs.DispatchPayloadConfig{File: "in.txt"}
	job.Meta = map[string]string{"owner": "ml"}
	job.Canonicalize()
	return job
}

func TestJobDispatch(t *testing.T) {
	t.Parallel()
	s, _ := periodicServer(t, time.Unix(1_790_000_000, 0))
	if resp := registerJob(t, s, paramJob("render", "required", []string{"scene"}, []string{"quality"})); resp.EvalID != "" {
		t.Fatalf("register parameterized parent: eval %q, want none", resp.EvalID)
	}
	registerJob(t, s, gpuJob("plain", structs.JobTypeBatch, 1, 0))
	big := make([]byte, structs.DispatchPayloadSizeLimit+1)
	tests := []struct {
		name    string
		req     structs.JobDispatchRequest
		want    error
		message string
	}{
		{"not found", structs.JobDispatchRequest{JobID: "nope"}, structs.ErrNotFound, `job "nope" not found`},
		{"not parameterized", structs.JobDispatchRequest{JobID: "plain"}, structs.ErrInvalid, "not a parameterized job"},
		{"payload missing", structs.JobDispatchRequest{JobID: "render", Meta: map[string]string{"scene": "a"}}, structs.ErrInvalid, "payload is required"},
		{"payload too big", structs.JobDispatchRequest{JobID: "render", Payload: big, Meta: map[string]string{"scene": "a"}}, structs.ErrInvalid, "exceeds the limit of 16384"},
		{"meta missing", structs.JobDispatchRequest{JobID: "render", Payload: []byte("x")}, structs.ErrInvalid, "missing required meta keys: scene"},
		{"meta unknown", structs.JobDispatchRequest{JobID: "render", Payload: []byte("x"), Meta: map[string]string{"scene": "a", "color": "red"}}, structs.ErrInvalid, "not allowed by the parameterized block: color"},
		{"bad prefix", structs.JobDispatchRequest{JobID: "render", Payload: []byte("x"), Meta: map[string]string{"scene": "a"}, IdPrefixTemplate: "../x"}, structs.ErrInvalid, "id prefix template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			err := s.RPC(structs.RPCJobDispatch, &req, &structs.JobDispatchResponse{})
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("dispatch: %v, want %v with %q", err, tt.want, tt.message)
			}
		})
	}

	req := &structs.JobDispatchRequest{JobID: "render", Payload: []byte("hello"), Meta: map[string]string{"scene": "castle"}, IdPrefixTemplate: "nightly"}
	var resp structs.JobDispatchResponse
	call(t, s, structs.RPCJobDispatch, req, &resp)
	if !strings.HasPrefix(resp.DispatchedJobID, "render/dispatch-nightly-1790000000-") || resp.EvalID == "" || resp.JobCreateIndex == 0 {
		t.Fatalf("dispatch = %+v, want a render/dispatch-nightly-<unix>-<hex> child with an eval", resp)
	}
	child := storedJob(t, s, resp.DispatchedJobID)
	if !child.Dispatched || child.ParentID != "render" || string(child.Payload) != "hello" ||
		child.Meta["scene"] != "castle" || child.Meta["owner"] != "ml" || child.IsParent() {
		t.Errorf("child = dispatched %v parent %q payload %q meta %v, want a dispatched child of render with payload and merged meta",
			child.Dispatched, child.ParentID, child.Payload, child.Meta)
	}
	list := &structs.JobListRequest{}
	var jobs structs.JobListResponse
	call(t, s, structs.RPCJobList, list, &jobs)
	var sawChild, sawParent bool
	for _, j := range jobs.Jobs {
		sawChild = sawChild || (j.ID == resp.DispatchedJobID && j.ParentID == "render")
		sawParent = sawParent || (j.ID == "render" && j.ParameterizedJob && j.Status == structs.JobStatusRunning)
	}
	if !sawChild || !sawParent {
		t.Errorf("job list %+v: want the running parent and its child", jobs.Jobs)
	}
}

func TestPeriodicACL(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	reg := &structs.JobRegisterRequest{Job: paramJob("render", "optional", nil, nil)}
	reg.AuthToken = mgmt
	call(t, s, structs.RPCJobRegister, reg, &structs.JobRegisterResponse{})
	pj := &structs.JobRegisterRequest{Job: periodicJob("nightly", "@daily", "UTC", false)}
	pj.AuthToken = mgmt
	call(t, s, structs.RPCJobRegister, pj, &structs.JobRegisterResponse{})

	reader := clientToken(t, s, mgmt, "reader", `namespace "default" { policy = "read" }`)
	dispatcher := clientToken(t, s, mgmt, "dispatcher", `namespace "default" { capabilities = ["dispatch-job"] }`)
	dispatch := func(token string) error {
		req := &structs.JobDispatchRequest{JobID: "render"}
		req.AuthToken = token
		return s.RPC(structs.RPCJobDispatch, req, &structs.JobDispatchResponse{})
	}
	force := func(token string) error {
		req := &structs.PeriodicForceRequest{JobID: "nightly"}
		req.AuthToken = token
		return s.RPC(structs.RPCPeriodicForce, req, &structs.PeriodicForceResponse{})
	}
	for name, err := range map[string]error{
		"anonymous dispatch": dispatch(""), "reader dispatch": dispatch(reader.SecretID),
		"anonymous force": force(""), "reader force": force(reader.SecretID), "dispatcher force": force(dispatcher.SecretID),
	} {
		if !isDenied(err) {
			t.Errorf("%s: %v, want permission denied", name, err)
		}
	}
	if err := dispatch(dispatcher.SecretID); err != nil {
		t.Errorf("dispatch with dispatch-job: %v", err)
	}
	if err := force(mgmt); err != nil {
		t.Errorf("force with management: %v", err)
	}
}

// TestDispatchNeedsTheQueue: dispatch-job alone does not put work in a
// queue the token may not submit into, nor run a shared GPU without
// submit-shared-gpu (what a submit of the same spec needs); Periodic.Force
// with submit-job is held to the same.
func TestDispatchNeedsTheQueue(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	q := &structs.QueueUpsertRequest{Queue: &structs.Queue{Name: "prod", Weight: 10}}
	q.AuthToken = mgmt
	call(t, s, structs.RPCQueueUpsert, q, &structs.GenericResponse{})
	register := func(job *structs.Job) {
		reg := &structs.JobRegisterRequest{Job: job}
		reg.AuthToken = mgmt
		call(t, s, structs.RPCJobRegister, reg, &structs.JobRegisterResponse{})
	}
	inProd := paramJob("render", "optional", nil, nil)
	inProd.Queue = "prod"
	register(inProd)
	shared := paramJob("share", "optional", nil, nil)
	shared.TaskGroups[0].Tasks[0].Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1, MemoryMB: 1024}}
	register(shared)
	nightly := periodicJob("nightly", "@daily", "UTC", false)
	nightly.Queue = "prod"
	register(nightly)

	dispatcher := clientToken(t, s, mgmt, "dispatcher", `namespace "default" { capabilities = ["dispatch-job", "submit-job"] }`)
	prod := clientToken(t, s, mgmt, "prod-dispatcher", `namespace "default" { capabilities = ["dispatch-job", "submit-job", "submit-shared-gpu"] }
queue "prod" { policy = "write" }`)
	dispatch := func(token, id string) error {
		req := &structs.JobDispatchRequest{JobID: id}
		req.AuthToken = token
		return s.RPC(structs.RPCJobDispatch, req, &structs.JobDispatchResponse{})
	}
	force := func(token string) error {
		req := &structs.PeriodicForceRequest{JobID: "nightly"}
		req.AuthToken = token
		return s.RPC(structs.RPCPeriodicForce, req, &structs.PeriodicForceResponse{})
	}
	if err := dispatch(dispatcher.SecretID, "render"); !isDenied(err) {
		t.Errorf("dispatch into queue prod without its write: %v, want permission denied", err)
	}
	if err := dispatch(dispatcher.SecretID, "share"); !isDenied(err) {
		t.Errorf("dispatch of a shared GPU job without submit-shared-gpu: %v, want permission denied", err)
	}
	if err := force(dispatcher.SecretID); !isDenied(err) {
		t.Errorf("force into queue prod without its write: %v, want permission denied", err)
	}
	for _, id := range []string{"render", "share"} {
		if err := dispatch(prod.SecretID, id); err != nil {
			t.Errorf("dispatch %s with the queue and submit-shared-gpu: %v", id, err)
		}
	}
	if err := force(prod.SecretID); err != nil {
		t.Errorf("force with the queue: %v", err)
	}
}
