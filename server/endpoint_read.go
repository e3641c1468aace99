package server

import (
	"fmt"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// The reads the HTTP API serves (endpoint_*_read.go, endpoint_eval.go,
// endpoint_gpu.go) share what is here: the blocking query, the index a
// list reports, and finding one object by ID or unique ID prefix.

// blockingRead runs read as a blocking query with q's MinQueryIndex and
// MaxQueryTime (capped by maxQueryTime) and fills meta. read returns the
// index its answer reflects; the reply's index is at least 1, so that a
// query from index 0 never blocks and the next one from the reply's index
// does. A read that fails answers at once.
func (s *Server) blockingRead(q structs.QueryOptions, meta *structs.QueryMeta, read func(ws memdb.WatchSet, st *state.StateStore) (uint64, error)) error {
	ctx, cancel := s.queryContext(q)
	defer cancel()
	index, err := s.State().BlockingQuery(ctx, q.MinQueryIndex, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		idx, err := read(ws, st)
		return max(idx, 1), err
	})
	if err != nil {
		return err
	}
	meta.Index = index
	s.setQueryMeta(meta)
	return nil
}

// queryNamespace is the namespace a read is about: the default one when
// it names none; "*" means all.
func queryNamespace(q structs.QueryOptions) string {
	if q.Namespace == "" {
		return structs.DefaultNamespace
	}
	return q.Namespace
}

// newestIndex returns the highest ModifyIndex of objs, or the table's
// index when there are none, for reads of a filtered list.
func newestIndex[T any](st *state.StateStore, table string, objs []T, modifyIndex func(T) uint64) (uint64, error) {
	var idx uint64
	for _, o := range objs {
		idx = max(idx, modifyIndex(o))
	}
	if idx > 0 {
		return idx, nil
	}
	return st.Index(table)
}

// maxResolveIDs is how many matching IDs an ambiguous prefix's error
// lists.
const maxResolveIDs = 10

// resolve finds exactly one object by full ID, else by unique ID prefix:
// none is structs.ErrNotFound, several structs.ErrInvalid naming up to
// maxResolveIDs of them. kind names the object in errors.
func resolve[T any](kind, id string, byID func(string) (*T, error), byPrefix func(string) ([]*T, error), idOf func(*T) string) (*T, error) {
	if id == "" {
		return nil, structs.KindErrorf(structs.ErrInvalid, "missing %s ID", kind)
	}
	obj, err := byID(id)
	if err != nil || obj != nil {
		return obj, err
	}
	matches, err := byPrefix(id)
	if err != nil {
		return nil, err
	}
	switch len(matches) {
	case 0:
		return nil, structs.KindErrorf(structs.ErrNotFound, "%s %q not found", kind, id)
	case 1:
		return matches[0], nil
	}
	ids := make([]string, 0, min(len(matches), maxResolveIDs))
	for _, m := range matches[:min(len(matches), maxResolveIDs)] {
		ids = append(ids, idOf(m))
	}
	return nil, structs.KindErrorf(structs.ErrInvalid, "%s prefix %q matches %d objects: %s", kind, id, len(matches), strings.Join(ids, ", "))
}

// resolveAlloc resolves an allocation ID or prefix; a prefix matches
// only allocations of namespaces keep admits (those the caller may
// read), so that a prefix tells nothing of the others.
func resolveAlloc(ws memdb.WatchSet, st *state.StateStore, id string, keep func(ns string) bool) (*structs.Allocation, error) {
	return resolve("allocation", id,
		func(id string) (*structs.Allocation, error) { return st.AllocByID(ws, id) },
		func(p string) ([]*structs.Allocation, error) {
			allocs, err := st.AllocsByIDPrefix(ws, "*", p)
			return keepAllocs(allocs, keep), err
		},
		func(a *structs.Allocation) string { return a.ID })
}

// resolveEval is resolveAlloc for evaluations.
func resolveEval(ws memdb.WatchSet, st *state.StateStore, id string, keep func(ns string) bool) (*structs.Evaluation, error) {
	return resolve("evaluation", id,
		func(id string) (*structs.Evaluation, error) { return st.EvalByID(ws, id) },
		func(p string) ([]*structs.Evaluation, error) {
			evals, err := st.EvalsByIDPrefix(ws, "*", p)
			return keepEvals(evals, keep), err
		},
		func(e *structs.Evaluation) string { return e.ID })
}

func resolveNode(ws memdb.WatchSet, st *state.StateStore, id string) (*structs.Node, error) {
	return resolve("node", id,
		func(id string) (*structs.Node, error) { return st.NodeByID(ws, id) },
		func(p string) ([]*structs.Node, error) { return st.NodesByIDPrefix(ws, p) },
		func(n *structs.Node) string { return n.ID })
}

// allocStubs returns the stubs of allocs, [] (not nil) for none.
func allocStubs(allocs []*structs.Allocation) []*structs.AllocListStub {
	out := make([]*structs.AllocListStub, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, a.Stub())
	}
	return out
}

// nonNil returns s, or an empty slice for nil, so that an empty list
// encodes as [] and not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// errMissing is the error of a read that names no object.
func errMissing(method, what string) error {
	return fmt.Errorf("%s: missing %s: %w", method, what, structs.ErrInvalid)
}
