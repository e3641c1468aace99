package server

import (
	"errors"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// serviceAlloc registers a node and a one-allocation job with token and
// waits until the allocation is placed; it returns the node and the
// allocation.
func serviceAlloc(t *testing.T, s *Server, token, jobID string) (*structs.Node, *structs.Allocation) {
	t.Helper()
	node := gpuNode("svc-"+jobID, 0)
	call(t, s, structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: node}, &structs.NodeUpdateResponse{})
	job := &structs.Job{ID: jobID, Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1,
			Services: []*structs.Service{{Name: "web", PortLabel: "8080"}, {Name: "api", PortLabel: "8080"}, {Name: "db", PortLabel: "8080"}},
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	job.Canonicalize()
	req := &structs.JobRegisterRequest{Job: job}
	req.AuthToken = token
	call(t, s, structs.RPCJobRegister, req, &structs.JobRegisterResponse{})
	var alloc *structs.Allocation
	waitFor(t, 10*time.Second, func() (bool, string) {
		allocs := liveAllocs(t, s, jobID)
		if len(allocs) == 1 {
			alloc = allocs[0]
		}
		return alloc != nil, "allocation never placed"
	})
	return node, alloc
}

func registration(alloc *structs.Allocation, name string) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{ID: "_nomad-task-" + alloc.ID + "-group-web-" + name + "-8080", ServiceName: name,
		AllocID: alloc.ID, Address: "127.0.0.1", Port: 8080, Tags: []string{"b", "a"},
		Namespace: "forged", JobID: "forged", NodeID: "forged"}
}

// TestServiceRegistrationEndpoints: a node registers for its own
// allocation (the server, not the node, decides namespace, job and
// node), users list, read and delete; another node, a wrong secret and
// an unknown allocation are refused.
func TestServiceRegistrationEndpoints(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	node, alloc := serviceAlloc(t, s, "", "svc")
	up := &structs.ServiceRegistrationUpsertRequest{NodeID: node.ID, SecretID: node.SecretID,
		Services: []*structs.ServiceRegistration{registration(alloc, "web"), registration(alloc, "api")}}
	call(t, s, structs.RPCServiceRegistrationUpsert, up, &structs.GenericResponse{})

	var got structs.ServiceRegistrationByNameResponse
	call(t, s, structs.RPCServiceRegistrationGetService, &structs.ServiceRegistrationByNameRequest{ServiceName: "web"}, &got)
	if len(got.Services) != 1 || got.Index == 0 {
		t.Fatalf("GetService web = %+v (index %d), want one", got.Services, got.Index)
	}
	r := got.Services[0]
	if r.Namespace != structs.DefaultNamespace || r.JobID != "svc" || r.NodeID != node.ID || r.Datacenter != "dc1" || r.Port != 8080 {
		t.Errorf("registration = %+v, want the allocation's namespace, job, node and datacenter", r)
	}
	var tagged structs.ServiceRegistrationByNameResponse
	call(t, s, structs.RPCServiceRegistrationGetService, &structs.ServiceRegistrationByNameRequest{ServiceName: "web", Tag: "nope"}, &tagged)
	if len(tagged.Services) != 0 {
		t.Errorf("GetService web tag nope = %+v, want none", tagged.Services)
	}
	tagged = structs.ServiceRegistrationByNameResponse{}
	call(t, s, structs.RPCServiceRegistrationGetService, &structs.ServiceRegistrationByNameRequest{ServiceName: "web", Tag: "a"}, &tagged)
	if len(tagged.Services) != 1 {
		t.Errorf("GetService web tag a = %+v, want one", tagged.Services)
	}
	var list structs.ServiceRegistrationListResponse
	call(t, s, structs.RPCServiceRegistrationList, &structs.ServiceRegistrationListRequest{}, &list)
	if len(list.Services) != 1 || len(list.Services[0].Services) != 2 || list.Services[0].Services[0].ServiceName != "api" ||
		len(list.Services[0].Services[0].Tags) != 2 || list.Services[0].Services[0].Tags[0] != "a" {
		t.Fatalf("List = %+v", list.Services)
	}

	other := gpuNode("intruder", 0)
	call(t, s, structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: other}, &structs.NodeUpdateResponse{})
	refusals := []struct {
		name string
		req  *structs.ServiceRegistrationUpsertRequest
		want error
	}{
		{"another node's alloc", &structs.ServiceRegistrationUpsertRequest{NodeID: other.ID, SecretID: other.SecretID,
			Services: []*structs.ServiceRegistration{registration(alloc, "evil")}}, structs.ErrPermissionDenied},
		{"wrong secret", &structs.ServiceRegistrationUpsertRequest{NodeID: node.ID, SecretID: other.SecretID,
			Services: []*structs.ServiceRegistration{registration(alloc, "evil")}}, structs.ErrPermissionDenied},
		{"unknown alloc", &structs.ServiceRegistrationUpsertRequest{NodeID: node.ID, SecretID: node.SecretID,
			Services: []*structs.ServiceRegistration{registration(&structs.Allocation{ID: "nope"}, "evil")}}, structs.ErrNotFound},
		{"no services", &structs.ServiceRegistrationUpsertRequest{NodeID: node.ID, SecretID: node.SecretID}, structs.ErrInvalid},
		{"service not in the job", &structs.ServiceRegistrationUpsertRequest{NodeID: node.ID, SecretID: node.SecretID,
			Services: []*structs.ServiceRegistration{registration(alloc, "evil")}}, structs.ErrPermissionDenied},
		{"bad port", &structs.ServiceRegistrationUpsertRequest{NodeID: node.ID, SecretID: node.SecretID,
			Services: []*structs.ServiceRegistration{{ID: "x", ServiceName: "x", AllocID: alloc.ID, Port: 70000}}}, structs.ErrInvalid},
	}
	for _, tt := range refusals {
		err := s.RPC(structs.RPCServiceRegistrationUpsert, tt.req, &structs.GenericResponse{})
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	err := s.RPC(structs.RPCServiceRegistrationDeregister, &structs.ServiceRegistrationDeleteByAllocRequest{
		NodeID: other.ID, SecretID: other.SecretID, AllocIDs: []string{alloc.ID}}, &structs.GenericResponse{})
	if !errors.Is(err, structs.ErrPermissionDenied) {
		t.Errorf("deregister another node's alloc: %v, want permission denied", err)
	}

	del := &structs.ServiceRegistrationDeleteByIDRequest{ID: r.ID}
	call(t, s, structs.RPCServiceRegistrationDeleteByID, del, &structs.GenericResponse{})
	if err := s.RPC(structs.RPCServiceRegistrationDeleteByID, del, &structs.GenericResponse{}); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("second delete: %v, want not found", err)
	}
	call(t, s, structs.RPCServiceRegistrationDeregister, &structs.ServiceRegistrationDeleteByAllocRequest{
		NodeID: node.ID, SecretID: node.SecretID, AllocIDs: []string{alloc.ID}}, &structs.GenericResponse{})
	list = structs.ServiceRegistrationListResponse{}
	call(t, s, structs.RPCServiceRegistrationList, &structs.ServiceRegistrationListRequest{}, &list)
	if len(list.Services) != 0 {
		t.Errorf("after deregistering the alloc: %+v", list.Services)
	}
}

// TestServiceRegistrationACL: reads need read-job in the namespace and a
// delete submit-job; "*" lists only what the token may read.
func TestServiceRegistrationACL(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	node, alloc := serviceAlloc(t, s, mgmt, "svc")
	call(t, s, structs.RPCServiceRegistrationUpsert, &structs.ServiceRegistrationUpsertRequest{NodeID: node.ID, SecretID: node.SecretID,
		Services: []*structs.ServiceRegistration{registration(alloc, "web")}}, &structs.GenericResponse{})
	reader := clientToken(t, s, mgmt, "reader", `namespace "default" { policy = "read" }`)
	stranger := clientToken(t, s, mgmt, "stranger", `namespace "other" { policy = "write" }`)

	get := func(token string) error {
		req := &structs.ServiceRegistrationByNameRequest{ServiceName: "web"}
		req.AuthToken = token
		return s.RPC(structs.RPCServiceRegistrationGetService, req, &structs.ServiceRegistrationByNameResponse{})
	}
	if err := get(reader.SecretID); err != nil {
		t.Errorf("reader GetService: %v", err)
	}
	for name, token := range map[string]string{"anonymous": "", "stranger": stranger.SecretID} {
		if err := get(token); !isDenied(err) {
			t.Errorf("%s GetService: %v, want permission denied", name, err)
		}
	}
	list := &structs.ServiceRegistrationListRequest{}
	list.Namespace, list.AuthToken = "*", stranger.SecretID
	var listed structs.ServiceRegistrationListResponse
	call(t, s, structs.RPCServiceRegistrationList, list, &listed)
	if len(listed.Services) != 0 {
		t.Errorf("stranger lists %+v, want nothing of default", listed.Services)
	}
	del := &structs.ServiceRegistrationDeleteByIDRequest{ID: registration(alloc, "web").ID}
	del.AuthToken = reader.SecretID
	if err := s.RPC(structs.RPCServiceRegistrationDeleteByID, del, &structs.GenericResponse{}); !isDenied(err) {
		t.Errorf("reader delete: %v, want permission denied", err)
	}
	del.AuthToken = mgmt
	call(t, s, structs.RPCServiceRegistrationDeleteByID, del, &structs.GenericResponse{})
}

// TestServiceRegistrationIDOfAnotherAlloc: a node that runs one
// allocation cannot overwrite another allocation's registration by
// sending its ID (upserts replace by ID), neither through the endpoint
// nor through a Raft entry that skipped it.
func TestServiceRegistrationIDOfAnotherAlloc(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	node1, alloc1 := serviceAlloc(t, s, "", "victim")
	node2, alloc2 := serviceAlloc(t, s, "", "attacker")
	victim := registration(alloc1, "db")
	call(t, s, structs.RPCServiceRegistrationUpsert, &structs.ServiceRegistrationUpsertRequest{NodeID: node1.ID, SecretID: node1.SecretID,
		Services: []*structs.ServiceRegistration{victim}}, &structs.GenericResponse{})

	owner := node1
	if alloc2.NodeID == node2.ID {
		owner = node2
	}
	forged := registration(alloc2, "db")
	forged.ID, forged.Address, forged.Port = victim.ID, "10.6.6.6", 6666
	err := s.RPC(structs.RPCServiceRegistrationUpsert, &structs.ServiceRegistrationUpsertRequest{NodeID: owner.ID, SecretID: owner.SecretID,
		Services: []*structs.ServiceRegistration{forged}}, &structs.GenericResponse{})
	if !errors.Is(err, structs.ErrPermissionDenied) {
		t.Errorf("upsert with another allocation's registration ID: %v, want permission denied", err)
	}
	forged.Namespace, forged.JobID, forged.NodeID = alloc2.Namespace, alloc2.JobID, alloc2.NodeID
	if err := s.State().UpsertServiceRegistrations(1<<40, []*structs.ServiceRegistration{forged}); !errors.Is(err, structs.ErrPermissionDenied) {
		t.Errorf("state upsert over another allocation's row: %v, want permission denied", err)
	}
	got, err := s.State().ServiceRegistrationByID(nil, victim.ID)
	if err != nil || got == nil || got.AllocID != alloc1.ID || got.Port != 8080 {
		t.Fatalf("victim's registration = %+v, %v; want it unchanged", got, err)
	}
}
