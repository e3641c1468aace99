package server

import (
	"errors"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestServiceRegistrationsByJobAndAlloc: a job's and an allocation's
// registrations, and none of another job's; an unknown job or
// allocation is not found; a token without read-job is refused.
func TestServiceRegistrationsByJobAndAlloc(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	for _, id := range []string{"svc", "other"} {
		_, alloc := serviceAlloc(t, s, mgmt, id)
		node, err := s.State().NodeByID(nil, alloc.NodeID) // the second job may land on the first node
		if err != nil || node == nil {
			t.Fatalf("node of %s: %v", alloc.ID, err)
		}
		up := &structs.ServiceRegistrationUpsertRequest{NodeID: node.ID, SecretID: node.SecretID,
			Services: []*structs.ServiceRegistration{registration(alloc, "web"), registration(alloc, "api")}}
		call(t, s, structs.RPCServiceRegistrationUpsert, up, &structs.GenericResponse{})
	}
	byJob := &structs.JobSpecificRequest{JobID: "svc"}
	byJob.AuthToken = mgmt
	var got structs.ServiceRegistrationByNameResponse
	call(t, s, structs.RPCServiceRegistrationsByJob, byJob, &got)
	if len(got.Services) != 2 || got.Services[0].JobID != "svc" || got.Services[1].JobID != "svc" || got.Index == 0 {
		t.Fatalf("by job = %+v, want svc's two", got.Services)
	}
	byAlloc := &structs.AllocSpecificRequest{AllocID: got.Services[0].AllocID[:8]}
	byAlloc.AuthToken = mgmt
	var ofAlloc structs.ServiceRegistrationByNameResponse
	call(t, s, structs.RPCServiceRegistrationsByAlloc, byAlloc, &ofAlloc)
	if len(ofAlloc.Services) != 2 || ofAlloc.Services[0].AllocID != got.Services[0].AllocID {
		t.Errorf("by allocation prefix = %+v, want its two", ofAlloc.Services)
	}

	byJob.JobID = "nope"
	if err := s.RPC(structs.RPCServiceRegistrationsByJob, byJob, &structs.ServiceRegistrationByNameResponse{}); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("unknown job: %v, want not found", err)
	}
	byAlloc.AllocID = "ffffffff"
	if err := s.RPC(structs.RPCServiceRegistrationsByAlloc, byAlloc, &structs.ServiceRegistrationByNameResponse{}); err == nil {
		t.Error("unknown allocation: no error")
	}
	nobody := clientToken(t, s, mgmt, "elsewhere", `namespace "elsewhere" { policy = "read" }`)
	byJob.JobID, byJob.AuthToken = "svc", nobody.SecretID
	if err := s.RPC(structs.RPCServiceRegistrationsByJob, byJob, &structs.ServiceRegistrationByNameResponse{}); !isDenied(err) {
		t.Errorf("by job without read-job: %v, want permission denied", err)
	}
	byAlloc.AllocID, byAlloc.AuthToken = got.Services[0].AllocID, nobody.SecretID
	if err := s.RPC(structs.RPCServiceRegistrationsByAlloc, byAlloc, &structs.ServiceRegistrationByNameResponse{}); !isDenied(err) && !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("by allocation without read-job: %v, want refused", err)
	}
}
