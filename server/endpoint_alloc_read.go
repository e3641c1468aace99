package server

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// List returns the stubs of the allocations of the request's namespace
// ("*" for all) whose ID starts with Prefix, sorted by ID; its index is
// the allocations' table's.
func (e *allocEndpoint) List(args *structs.AllocListRequest, reply *structs.AllocListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCAllocList, &err)
	if done, err := s.forward(structs.RPCAllocList, args, reply); done {
		return err
	}
	keep, err := s.nsFilter(args.AuthToken, queryNamespace(args.QueryOptions), acl.CapReadJob)
	if err != nil {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByIDPrefix(ws, ns, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Allocations = allocStubs(keepAllocs(allocs, keep))
		return st.Index(state.TableAllocs)
	})
}

// GetAlloc returns the allocation with ID AllocID, else the only one, in
// any namespace, whose ID starts with it (structs.ErrNotFound for none,
// structs.ErrInvalid for several); its index is the allocation's
// ModifyIndex.
func (e *allocEndpoint) GetAlloc(args *structs.AllocSpecificRequest, reply *structs.SingleAllocResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCAllocGetAlloc, &err)
	if done, err := s.forward(structs.RPCAllocGetAlloc, args, reply); done {
		return err
	}
	a, err := s.anyNS(args.AuthToken, acl.CapReadJob)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		alloc, err := resolveAlloc(ws, st, args.AllocID, func(ns string) bool { return a.AllowNamespaceOperation(ns, acl.CapReadJob) })
		if err != nil {
			return 0, err
		}
		if !a.AllowNamespaceOperation(alloc.Namespace, acl.CapReadJob) {
			return 0, errPermissionDenied
		}
		reply.Alloc = alloc.Copy()
		return alloc.ModifyIndex, nil
	})
}
