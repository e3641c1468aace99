package server

import (
	"fmt"
	"math"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// namespaceEndpoint serves the "Namespace" RPC methods.
type namespaceEndpoint struct{ srv *Server }

// Upsert creates or replaces namespaces. A namespace naming a quota that
// does not exist is refused (ErrInvalid) before anything is written.
func (e *namespaceEndpoint) Upsert(args *structs.NamespaceUpsertRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNamespaceUpsert, &err)
	if done, err := s.forward(structs.RPCNamespaceUpsert, args, reply); done {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Namespaces) == 0 {
		return fmt.Errorf("upsert namespaces: none given: %w", structs.ErrInvalid)
	}
	req := &structs.NamespaceUpsertRequest{WriteRequest: args.WriteRequest}
	for _, ns := range args.Namespaces {
		req.Namespaces = append(req.Namespaces, ns.Copy())
	}
	if err := s.dryRun(func(tx *state.Txn) error { return tx.UpsertNamespaces(req.Namespaces) }); err != nil {
		return err
	}
	index, err := s.raftApply(structs.NamespaceUpsertRequestType, req)
	if err != nil {
		return fmt.Errorf("upsert namespaces: %w", err)
	}
	reply.Index = index
	return nil
}

// Delete removes namespaces. The default namespace, one with jobs and an
// unknown one are refused, and then nothing is deleted.
func (e *namespaceEndpoint) Delete(args *structs.NamespaceDeleteRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNamespaceDelete, &err)
	if done, err := s.forward(structs.RPCNamespaceDelete, args, reply); done {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Namespaces) == 0 {
		return fmt.Errorf("delete namespaces: none given: %w", structs.ErrInvalid)
	}
	if err := s.dryRun(func(tx *state.Txn) error { return tx.DeleteNamespaces(args.Namespaces) }); err != nil {
		return err
	}
	index, err := s.raftApply(structs.NamespaceDeleteRequestType, args)
	if err != nil {
		return fmt.Errorf("delete namespaces: %w", err)
	}
	reply.Index = index
	return nil
}

// Get returns one namespace (nil when there is none of that name),
// blocking while MinQueryIndex is not below the namespaces' index.
func (e *namespaceEndpoint) Get(args *structs.NamespaceSpecificRequest, reply *structs.SingleNamespaceResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNamespaceGet, &err)
	if done, err := s.forward(structs.RPCNamespaceGet, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, func(a *acl.ACL) bool { return a.AllowNamespace(args.Name) }); err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableNamespaces, func(ws memdb.WatchSet, st *state.StateStore) error {
		ns, err := st.NamespaceByName(ws, args.Name)
		reply.Namespace = ns.Copy()
		return err
	})
}

// List returns the namespaces whose name starts with Prefix, sorted.
func (e *namespaceEndpoint) List(args *structs.NamespaceListRequest, reply *structs.NamespaceListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNamespaceList, &err)
	if done, err := s.forward(structs.RPCNamespaceList, args, reply); done {
		return err
	}
	a, err := s.authorize(args.AuthToken, func(a *acl.ACL) bool { return a.AllowNamespace("*") })
	if err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableNamespaces, func(ws memdb.WatchSet, st *state.StateStore) error {
		nss, err := st.Namespaces(ws, args.Prefix)
		reply.Namespaces = nil
		for _, ns := range nss {
			if a.AllowNamespace(ns.Name) {
				reply.Namespaces = append(reply.Namespaces, ns.Copy())
			}
		}
		return err
	})
}

// dryRun applies fn to a throwaway copy of the state, so that a write
// the FSM would refuse is refused before it takes a Raft entry. The FSM
// checks again: the state may change before the entry applies.
func (s *Server) dryRun(fn func(tx *state.Txn) error) error {
	snap, err := s.State().Snapshot()
	if err != nil {
		return err
	}
	return snap.Write(math.MaxUint64, fn)
}

// checkNamespace refuses (ErrInvalid) a job in a namespace that does not
// exist.
func (s *Server) checkNamespace(name string) error {
	ns, err := s.State().NamespaceByName(nil, name)
	if err != nil {
		return fmt.Errorf("read namespace %q: %w", name, err)
	}
	if ns == nil {
		return fmt.Errorf("namespace %q does not exist (create it with `drover namespace apply %s`): %w", name, name, structs.ErrInvalid)
	}
	return nil
}

// blockingTableRead runs read as a blocking query whose index is the
// tables' (at least 1), and fills meta.
func (s *Server) blockingTableRead(q structs.QueryOptions, meta *structs.QueryMeta, table string, read func(ws memdb.WatchSet, st *state.StateStore) error, more ...string) error {
	ctx, cancel := s.queryContext(q)
	defer cancel()
	index, err := s.State().BlockingQuery(ctx, q.MinQueryIndex, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if err := read(ws, st); err != nil {
			return 0, err
		}
		return tablesIndex(st, append([]string{table}, more...))
	})
	if err != nil {
		return err
	}
	meta.Index = index
	s.setQueryMeta(meta)
	return nil
}

func tablesIndex(st *state.StateStore, tables []string) (uint64, error) {
	idx := uint64(1)
	for _, t := range tables {
		i, err := st.Index(t)
		if err != nil {
			return 0, err
		}
		idx = max(idx, i)
	}
	return idx, nil
}
