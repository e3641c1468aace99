package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// scaledJob is a service job whose group "train" may hold 1 to 3.
func boundedJob(id, ns string) *structs.Job {
	job := gpuJob(id, structs.JobTypeService, 2, 0)
	job.Namespace = ns
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: ptr[int64](1), Max: ptr[int64](3),
		Policy: map[string]any{"cooldown": "1m"}}
	job.Canonicalize()
	return job
}

// TestJobScaleWithinPolicyBounds: Job.Scale refuses a count outside the
// group's scaling bounds, naming them, and changes nothing; a count
// within them applies.
func TestJobScaleWithinPolicyBounds(t *testing.T) {
	s := startServer(t, testConfig(t))
	registerJob(t, s, boundedJob("web", structs.DefaultNamespace))
	before := storedJob(t, s, "web")
	for _, tt := range []struct {
		count int
		text  string
	}{
		{4, "group count was greater than scaling policy maximum: 4 > 3 (the group's scaling bounds are [1, 3])"},
		{0, "group count was less than scaling policy minimum: 0 < 1 (the group's scaling bounds are [1, 3])"},
	} {
		_, err := scale(s, &structs.JobScaleRequest{JobID: "web", Group: "train", Count: ptr(tt.count)})
		if !errors.Is(err, structs.ErrInvalid) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("scale to %d: got %v, want ErrInvalid with %q", tt.count, err, tt.text)
		}
	}
	if after := storedJob(t, s, "web"); after.ModifyIndex != before.ModifyIndex {
		t.Errorf("a refused scale changed the job")
	}
	if _, err := scale(s, &structs.JobScaleRequest{JobID: "web", Group: "train", Count: ptr(3)}); err != nil {
		t.Fatalf("scale to 3 (the max): %v", err)
	}
	if got := storedJob(t, s, "web").TaskGroups[0].Count; got != 3 {
		t.Errorf("count %d after scaling to 3", got)
	}
}

// TestScalingPolicyReads: the policies are listed (job and type
// filters, across namespaces with "*"), read by their derived ID, keep
// that ID across job versions, carry the job's indexes, are disabled
// while the job is stopped, and an unknown ID is not found.
func TestScalingPolicyReads(t *testing.T) {
	s := startServer(t, testConfig(t))
	call(t, s, structs.RPCNamespaceUpsert, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team-a"}}}, &structs.GenericResponse{})
	registerJob(t, s, boundedJob("web", structs.DefaultNamespace))
	registerJob(t, s, boundedJob("api", "team-a"))
	registerJob(t, s, gpuJob("plain", structs.JobTypeBatch, 1, 0))

	list := func(ns, job, typ string) []*structs.ScalingPolicyListStub {
		t.Helper()
		var resp structs.ScalingPolicyListResponse
		call(t, s, structs.RPCScalingListPolicies, &structs.ScalingPolicyListRequest{JobID: job, Type: typ, QueryOptions: structs.QueryOptions{Namespace: ns}}, &resp)
		return resp.Policies
	}
	if got := list("", "", ""); len(got) != 1 || got[0].Target["Job"] != "web" || !got[0].Enabled || got[0].Type != "horizontal" {
		t.Fatalf("default namespace: %+v, want web's policy", got)
	}
	if got := list("*", "", ""); len(got) != 2 {
		t.Errorf("all namespaces: %d policies, want 2", len(got))
	}
	if got := list("*", "api", ""); len(got) != 1 || got[0].Target["Namespace"] != "team-a" {
		t.Errorf("job=api: %+v", got)
	}
	if got := list("*", "", "vertical_cpu"); len(got) != 0 {
		t.Errorf("type=vertical_cpu: %+v, want none", got)
	}

	id := structs.ScalingPolicyID(structs.DefaultNamespace, "web", "train")
	get := func(id string) (*structs.ScalingPolicy, error) {
		var resp structs.SingleScalingPolicyResponse
		err := s.RPC(structs.RPCScalingGetPolicy, &structs.ScalingPolicySpecificRequest{ID: id}, &resp)
		return resp.Policy, err
	}
	p, err := get(id)
	job := storedJob(t, s, "web")
	if err != nil || p.ID != id || *p.Max != 3 || p.Policy["cooldown"] != "1m" || p.CreateIndex != job.CreateIndex || p.ModifyIndex != job.JobModifyIndex {
		t.Fatalf("GetPolicy: %+v, %v", p, err)
	}
	// A new version keeps the ID and moves the ModifyIndex.
	v2 := boundedJob("web", structs.DefaultNamespace)
	v2.TaskGroups[0].Scaling.Max = ptr[int64](5)
	registerJob(t, s, v2)
	if p, err := get(id); err != nil || *p.Max != 5 || p.ModifyIndex <= job.JobModifyIndex {
		t.Errorf("after an update: %+v, %v; want max 5 under the same ID", p, err)
	}
	var dereg structs.JobDeregisterResponse
	call(t, s, structs.RPCJobDeregister, &structs.JobDeregisterRequest{JobID: "web"}, &dereg)
	if p, err := get(id); err != nil || *p.Enabled {
		t.Errorf("stopped job's policy: %+v, %v; want it disabled", p, err)
	}
	if _, err := get("00000000-0000-0000-0000-000000000000"); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("unknown ID: %v, want not found", err)
	}
}

// TestScalingPolicyACL: listing needs list-scaling-policies or
// list-jobs, reading one read-scaling-policy or read-job, in the
// namespace; a policy of a namespace the token may not read is not
// found.
func TestScalingPolicyACL(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	nsReq := &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team-a"}, {Name: "team-b"}}}
	nsReq.AuthToken = mgmt
	call(t, s, structs.RPCNamespaceUpsert, nsReq, &structs.GenericResponse{})
	for _, ns := range []string{"team-a", "team-b"} {
		req := &structs.JobRegisterRequest{Job: boundedJob("web", ns)}
		req.AuthToken = mgmt
		req.Namespace = ns
		call(t, s, structs.RPCJobRegister, req, &structs.JobRegisterResponse{})
	}
	scaler := clientToken(t, s, mgmt, "scaler", `namespace "team-a" { capabilities = ["list-scaling-policies", "read-scaling-policy"] }`)
	reader := clientToken(t, s, mgmt, "reader", `namespace "team-a" { policy = "read" }`)
	submitter := clientToken(t, s, mgmt, "submitter", `namespace "team-a" { capabilities = ["submit-job"] }`)
	idA := structs.ScalingPolicyID("team-a", "web", "train")
	idB := structs.ScalingPolicyID("team-b", "web", "train")

	list := func(token, ns string) ([]*structs.ScalingPolicyListStub, error) {
		var resp structs.ScalingPolicyListResponse
		err := s.RPC(structs.RPCScalingListPolicies, &structs.ScalingPolicyListRequest{QueryOptions: structs.QueryOptions{Namespace: ns, AuthToken: token}}, &resp)
		return resp.Policies, err
	}
	get := func(token, ns, id string) error {
		var resp structs.SingleScalingPolicyResponse
		return s.RPC(structs.RPCScalingGetPolicy, &structs.ScalingPolicySpecificRequest{ID: id, QueryOptions: structs.QueryOptions{Namespace: ns, AuthToken: token}}, &resp)
	}
	for _, tok := range []*structs.ACLToken{scaler, reader} {
		if ps, err := list(tok.SecretID, "*"); err != nil || len(ps) != 1 || ps[0].ID != idA {
			t.Errorf("%s lists %+v, %v; want team-a's policy only", tok.Name, ps, err)
		}
		if err := get(tok.SecretID, "team-a", idA); err != nil {
			t.Errorf("%s reads team-a's policy: %v", tok.Name, err)
		}
		if err := get(tok.SecretID, "team-a", idB); !errors.Is(err, structs.ErrNotFound) {
			t.Errorf("%s reads team-b's policy: %v, want not found", tok.Name, err)
		}
		if err := get(tok.SecretID, "team-b", idB); !isDenied(err) {
			t.Errorf("%s reads in team-b: %v, want denied", tok.Name, err)
		}
	}
	if _, err := list(submitter.SecretID, "team-a"); !isDenied(err) {
		t.Errorf("submit-job only lists: %v, want denied", err)
	}
	if err := get(submitter.SecretID, "team-a", idA); !isDenied(err) {
		t.Errorf("submit-job only reads: %v, want denied", err)
	}
	if _, err := list("", "team-a"); !isDenied(err) {
		t.Errorf("anonymous lists: %v, want denied", err)
	}
}
