package server

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// evalEndpoint serves the "Eval" RPC methods: reads of evaluations.
type evalEndpoint struct{ srv *Server }

// List returns the evaluations of the request's namespace ("*" for all)
// whose ID starts with Prefix, sorted by ID; its index is the
// evaluations' table's.
func (e *evalEndpoint) List(args *structs.EvalListRequest, reply *structs.EvalListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCEvalList, &err)
	if done, err := s.forward(structs.RPCEvalList, args, reply); done {
		return err
	}
	keep, err := s.nsFilter(args.AuthToken, queryNamespace(args.QueryOptions), acl.CapReadJob)
	if err != nil {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		evals, err := st.EvalsByIDPrefix(ws, ns, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Evaluations = nonNil(keepEvals(evals, keep))
		return st.Index(state.TableEvals)
	})
}

// GetEval returns the evaluation with ID EvalID, else the only one, in
// any namespace, whose ID starts with it (structs.ErrNotFound for none,
// structs.ErrInvalid for several); its index is the evaluation's
// ModifyIndex.
func (e *evalEndpoint) GetEval(args *structs.EvalSpecificRequest, reply *structs.SingleEvalResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCEvalGetEval, &err)
	if done, err := s.forward(structs.RPCEvalGetEval, args, reply); done {
		return err
	}
	a, err := s.anyNS(args.AuthToken, acl.CapReadJob)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		ev, err := resolveEval(ws, st, args.EvalID, func(ns string) bool { return a.AllowNamespaceOperation(ns, acl.CapReadJob) })
		if err != nil {
			return 0, err
		}
		if !a.AllowNamespaceOperation(ev.Namespace, acl.CapReadJob) {
			return 0, errPermissionDenied
		}
		reply.Eval = ev.Copy()
		return ev.ModifyIndex, nil
	})
}

// Allocations returns the stubs of the allocations the evaluation (by ID
// or unique prefix, as GetEval) created or updated; its index is the
// allocations' table's.
func (e *evalEndpoint) Allocations(args *structs.EvalSpecificRequest, reply *structs.EvalAllocationsResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCEvalAllocations, &err)
	if done, err := s.forward(structs.RPCEvalAllocations, args, reply); done {
		return err
	}
	a, err := s.anyNS(args.AuthToken, acl.CapReadJob)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		ev, err := resolveEval(ws, st, args.EvalID, func(ns string) bool { return a.AllowNamespaceOperation(ns, acl.CapReadJob) })
		if err != nil {
			return 0, err
		}
		if !a.AllowNamespaceOperation(ev.Namespace, acl.CapReadJob) {
			return 0, errPermissionDenied
		}
		allocs, err := st.AllocsByEval(ws, ev.ID)
		if err != nil {
			return 0, err
		}
		reply.Allocations = allocStubs(allocs)
		return st.Index(state.TableAllocs)
	})
}
