package server

import (
	"fmt"
	"slices"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// serviceEndpoint serves the "ServiceRegistration" RPC methods: the
// built-in service registry (provider = "nomad"). Clients write it for
// their own allocations; users read it and may delete an entry.
type serviceEndpoint struct{ srv *Server }

// Bounds of one registration's fields.
const (
	maxRegistrationIDLen = 512
	maxRegistrationField = structs.MaxRegistrationField
)

// Upsert registers service instances of allocations running on the
// calling node. The node proves itself with its secret and may register
// only for its own allocations; the namespace, job, node and datacenter
// of each registration come from the allocation, not from the caller.
func (e *serviceEndpoint) Upsert(args *structs.ServiceRegistrationUpsertRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCServiceRegistrationUpsert, &err)
	if done, err := s.forward(structs.RPCServiceRegistrationUpsert, args, reply); done {
		return err
	}
	if n := len(args.Services); n == 0 || n > structs.MaxRegistrationsBatch {
		return fmt.Errorf("register services: %d registrations, want 1 to %d: %w", n, structs.MaxRegistrationsBatch, structs.ErrInvalid)
	}
	if err := s.authorizeNode(structs.RPCServiceRegistrationUpsert, args.NodeID, args.SecretID); err != nil {
		return err
	}
	node, err := s.State().NodeByID(nil, args.NodeID)
	if err != nil || node == nil {
		return fmt.Errorf("register services: node %s: %w", args.NodeID, structs.ErrUnknownNode)
	}
	regs := make([]*structs.ServiceRegistration, 0, len(args.Services))
	for _, in := range args.Services {
		r, err := s.ownedRegistration(args.NodeID, node.Datacenter, in)
		if err != nil {
			return err
		}
		regs = append(regs, r)
	}
	req := &structs.ServiceRegistrationUpsertRequest{Services: regs, WriteRequest: structs.WriteRequest{Region: args.Region}}
	index, err := s.raftApply(structs.ServiceRegistrationUpsertRequestType, req)
	if err != nil {
		return fmt.Errorf("register services: %w", err)
	}
	reply.Index = index
	return nil
}

// ownedRegistration checks one registration of the node's and fills
// what the allocation decides.
func (s *Server) ownedRegistration(nodeID, dc string, in *structs.ServiceRegistration) (*structs.ServiceRegistration, error) {
	if err := checkRegistration(in); err != nil {
		return nil, err
	}
	a, err := s.State().AllocByID(nil, in.AllocID)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("register service %q: allocation %s: %w", in.ServiceName, in.AllocID, structs.ErrNotFound)
	}
	if a.NodeID != nodeID {
		s.logger.Warn("node call refused: allocation of another node", "method", structs.RPCServiceRegistrationUpsert, "node_id", nodeID, "alloc_id", a.ID)
		return nil, fmt.Errorf("%w: allocation %s is not on node %s", structs.ErrPermissionDenied, a.ID, nodeID)
	}
	// The ID names the allocation (Nomad's _nomad-task-<alloc>-...), so
	// a node cannot choose the ID of another allocation's registration
	// and overwrite it (upserts replace by ID).
	if prefix := structs.RegistrationIDPrefix(a.ID); !strings.HasPrefix(in.ID, prefix) {
		return nil, fmt.Errorf("%w: registration ID %q does not start with %q", structs.ErrPermissionDenied, in.ID, prefix)
	}
	if !allocHasService(a, in.ServiceName) {
		s.logger.Warn("node call refused: service not in the allocation's group", "method", structs.RPCServiceRegistrationUpsert, "node_id", nodeID, "alloc_id", a.ID)
		return nil, fmt.Errorf("%w: allocation %s has no service %q", structs.ErrPermissionDenied, a.ID, in.ServiceName)
	}
	r := in.Copy()
	r.Namespace, r.JobID, r.NodeID, r.Datacenter = a.Namespace, a.JobID, nodeID, dc
	r.CreateIndex, r.ModifyIndex = 0, 0
	return r, nil
}

// allocHasService reports whether the allocation's group (or one of its
// tasks) declares the service name, so that a node registers only the
// services its allocations' jobs asked for.
func allocHasService(a *structs.Allocation, name string) bool {
	if a.Job == nil {
		return false
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return false
	}
	return slices.ContainsFunc(tg.AllServices(), func(s *structs.Service) bool { return s != nil && s.Name == name })
}

// checkRegistration bounds what a client sends.
func checkRegistration(r *structs.ServiceRegistration) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("register service: "+format+": %w", append(args, structs.ErrInvalid)...)
	}
	switch {
	case r == nil:
		return bad("missing registration")
	case r.ID == "" || len(r.ID) > maxRegistrationIDLen || strings.ContainsAny(r.ID, "/\x00"):
		return bad("ID of %d bytes: want 1 to %d, no '/'", len(r.ID), maxRegistrationIDLen)
	case r.AllocID == "":
		return bad("missing allocation ID")
	case r.ServiceName == "" || len(r.ServiceName) > structs.MaxServiceNameLen:
		return bad("service name of %d bytes", len(r.ServiceName))
	case len(r.Address) > maxRegistrationField:
		return bad("address of %d bytes", len(r.Address))
	case r.Port < 0 || r.Port > 65535:
		return bad("port %d", r.Port)
	case len(r.Tags) > structs.MaxServiceTags:
		return bad("%d tags: at most %d", len(r.Tags), structs.MaxServiceTags)
	}
	for _, t := range r.Tags {
		if len(t) > maxRegistrationField {
			return bad("tag of %d bytes", len(t))
		}
	}
	return nil
}

// DeregisterAllocs removes the registrations of allocations on the
// calling node (a client whose allocation stopped).
func (e *serviceEndpoint) DeregisterAllocs(args *structs.ServiceRegistrationDeleteByAllocRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCServiceRegistrationDeregister, &err)
	if done, err := s.forward(structs.RPCServiceRegistrationDeregister, args, reply); done {
		return err
	}
	if n := len(args.AllocIDs); n == 0 || n > structs.MaxRegistrationsBatch {
		return fmt.Errorf("deregister services: %d allocations, want 1 to %d: %w", n, structs.MaxRegistrationsBatch, structs.ErrInvalid)
	}
	if err := s.authorizeNode(structs.RPCServiceRegistrationDeregister, args.NodeID, args.SecretID); err != nil {
		return err
	}
	for _, id := range args.AllocIDs {
		if err := s.checkAllocOwner(args.NodeID, id); err != nil {
			return err
		}
	}
	req := &structs.ServiceRegistrationDeleteByAllocRequest{AllocIDs: args.AllocIDs, WriteRequest: structs.WriteRequest{Region: args.Region}}
	index, err := s.raftApply(structs.ServiceRegistrationDeleteByAllocRequestType, req)
	if err != nil {
		return fmt.Errorf("deregister services: %w", err)
	}
	reply.Index = index
	return nil
}

// DeleteByID removes one registration of the request's namespace; it
// needs submit-job there. A running allocation's client registers it
// again when the client restarts.
func (e *serviceEndpoint) DeleteByID(args *structs.ServiceRegistrationDeleteByIDRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCServiceRegistrationDeleteByID, &err)
	if done, err := s.forward(structs.RPCServiceRegistrationDeleteByID, args, reply); done {
		return err
	}
	ns := writeNamespace(args.WriteRequest)
	if err := s.allowNS(args.AuthToken, ns, acl.CapSubmitJob); err != nil {
		return err
	}
	if args.ID == "" {
		return fmt.Errorf("delete service registration: missing ID: %w", structs.ErrInvalid)
	}
	if err := s.dryRun(func(tx *state.Txn) error { return tx.DeleteServiceRegistration(ns, args.ID) }); err != nil {
		return err
	}
	req := &structs.ServiceRegistrationDeleteByIDRequest{ID: args.ID, WriteRequest: args.WriteRequest}
	req.Namespace = ns
	index, err := s.raftApply(structs.ServiceRegistrationDeleteByIDRequestType, req)
	if err != nil {
		return fmt.Errorf("delete service registration %q: %w", args.ID, err)
	}
	reply.Index = index
	return nil
}

// List returns the service names (with their tags) of the request's
// namespace, or of every namespace the caller may read with "*",
// grouped by namespace as Nomad's /v1/services.
func (e *serviceEndpoint) List(args *structs.ServiceRegistrationListRequest, reply *structs.ServiceRegistrationListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCServiceRegistrationList, &err)
	if done, err := s.forward(structs.RPCServiceRegistrationList, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	keep, err := s.nsFilter(args.AuthToken, ns, acl.CapReadJob)
	if err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableServiceRegistrations, func(ws memdb.WatchSet, st *state.StateStore) error {
		regs, err := st.ServiceRegistrations(ws, ns)
		if err != nil {
			return err
		}
		kept := regs[:0:0]
		for _, r := range regs {
			if keep(r.Namespace) {
				kept = append(kept, r)
			}
		}
		reply.Services = state.ServiceListStubs(kept)
		if reply.Services == nil {
			reply.Services = []*structs.ServiceRegistrationListStub{}
		}
		return nil
	})
}

// GetService returns the registrations of one service of the request's
// namespace (read-job there).
func (e *serviceEndpoint) GetService(args *structs.ServiceRegistrationByNameRequest, reply *structs.ServiceRegistrationByNameResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCServiceRegistrationGetService, &err)
	if done, err := s.forward(structs.RPCServiceRegistrationGetService, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	if err := s.allowNS(args.AuthToken, ns, acl.CapReadJob); err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableServiceRegistrations, func(ws memdb.WatchSet, st *state.StateStore) error {
		regs, err := st.ServiceRegistrationsByName(ws, ns, args.ServiceName)
		reply.Services = make([]*structs.ServiceRegistration, 0, len(regs))
		for _, r := range regs {
			if args.Tag == "" || slices.Contains(r.Tags, args.Tag) {
				reply.Services = append(reply.Services, r.Copy())
			}
		}
		return err
	})
}
