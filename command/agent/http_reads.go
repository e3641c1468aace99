package agent

import (
	"context"
	"net/http"
	"strings"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
	"github.com/hashicorp/go-memdb"
)

// resolve finds exactly one object by full ID or unique prefix.
func resolve[T any](kind, id string, byID func(string) (*T, error), byPrefix func(string) ([]*T, error), idOf func(*T) string) (*T, error) {
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
		return nil, errorf(http.StatusNotFound, "%s %q not found", kind, id)
	case 1:
		return matches[0], nil
	}
	ids := make([]string, 0, min(len(matches), 10))
	for _, m := range matches[:min(len(matches), 10)] {
		ids = append(ids, idOf(m))
	}
	return nil, errorf(http.StatusBadRequest, "%s prefix %q matches %d objects: %s", kind, id, len(matches), strings.Join(ids, ", "))
}

func (h *httpAPI) allocsList(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		allocs, err := s.AllocsByIDPrefix(ws, o.Namespace, o.Prefix)
		if err != nil {
			return nil, 0, err
		}
		out := make([]*structs.AllocListStub, 0, len(allocs))
		for _, a := range allocs {
			out = append(out, a.Stub())
		}
		idx, err := tableIndex(s, "allocs")
		return out, idx, err
	})
}

func (h *httpAPI) allocRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		a, err := resolve("allocation", id,
			func(id string) (*structs.Allocation, error) { return s.AllocByID(ws, id) },
			func(p string) ([]*structs.Allocation, error) { return s.AllocsByIDPrefix(ws, "*", p) },
			func(a *structs.Allocation) string { return a.ID })
		if err != nil {
			return nil, 0, err
		}
		return a, a.ModifyIndex, nil
	})
}

func (h *httpAPI) evalsList(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		evals, err := s.EvalsByIDPrefix(ws, o.Namespace, o.Prefix)
		if err != nil {
			return nil, 0, err
		}
		if evals == nil {
			evals = []*structs.Evaluation{}
		}
		idx, err := tableIndex(s, "evals")
		return evals, idx, err
	})
}

func (h *httpAPI) lookupEval(ws memdb.WatchSet, s *state.StateStore, id string) (*structs.Evaluation, error) {
	return resolve("evaluation", id,
		func(id string) (*structs.Evaluation, error) { return s.EvalByID(ws, id) },
		func(p string) ([]*structs.Evaluation, error) { return s.EvalsByIDPrefix(ws, "*", p) },
		func(e *structs.Evaluation) string { return e.ID })
}

func (h *httpAPI) evalRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		e, err := h.lookupEval(ws, s, id)
		if err != nil {
			return nil, 0, err
		}
		return e, e.ModifyIndex, nil
	})
}

func (h *httpAPI) evalAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		e, err := h.lookupEval(ws, s, id)
		if err != nil {
			return nil, 0, err
		}
		allocs, err := s.AllocsByEval(ws, e.ID)
		if err != nil {
			return nil, 0, err
		}
		out := make([]*structs.AllocListStub, 0, len(allocs))
		for _, a := range allocs {
			out = append(out, a.Stub())
		}
		idx, err := tableIndex(s, "allocs")
		return out, idx, err
	})
}

func (h *httpAPI) nodesList(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		nodes, err := s.NodesByIDPrefix(ws, o.Prefix)
		if err != nil {
			return nil, 0, err
		}
		out := make([]*structs.NodeListStub, 0, len(nodes))
		for _, n := range nodes {
			out = append(out, n.Stub())
		}
		idx, err := tableIndex(s, "nodes")
		return out, idx, err
	})
}

func (h *httpAPI) lookupNode(ws memdb.WatchSet, s *state.StateStore, id string) (*structs.Node, error) {
	return resolve("node", id,
		func(id string) (*structs.Node, error) { return s.NodeByID(ws, id) },
		func(p string) ([]*structs.Node, error) { return s.NodesByIDPrefix(ws, p) },
		func(n *structs.Node) string { return n.ID })
}

func (h *httpAPI) nodeRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		n, err := h.lookupNode(ws, s, id)
		if err != nil {
			return nil, 0, err
		}
		out := n.Copy()
		out.SecretID = ""
		return out, n.ModifyIndex, nil
	})
}

func (h *httpAPI) nodeAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return h.blockingRead(w, r, func(ws memdb.WatchSet, s *state.StateStore, o structs.QueryOptions) (any, uint64, error) {
		n, err := h.lookupNode(ws, s, id)
		if err != nil {
			return nil, 0, err
		}
		allocs, err := s.AllocsByNode(ws, n.ID)
		if err != nil {
			return nil, 0, err
		}
		if allocs == nil {
			allocs = []*structs.Allocation{}
		}
		idx, err := tableIndex(s, "allocs")
		return allocs, idx, err
	})
}

func (h *httpAPI) statusLeader(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.b.Leader(), nil
}

func (h *httpAPI) statusPeers(w http.ResponseWriter, r *http.Request) (any, error) {
	peers := h.b.Peers()
	if peers == nil {
		peers = []string{}
	}
	return peers, nil
}

func (h *httpAPI) agentSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	return h.b.Self(), nil
}

// readBarrier makes a read without ?stale as fresh as one from the
// leader: on a follower it waits until the local state holds every write
// acknowledged before the request (server.ReadBarrier), or answers 503
// when there is no leader. With ?stale any server answers from its own
// state at once; X-Nomad-KnownLeader and X-Nomad-LastContact (setMeta)
// then say how current that state may be.
func (h *httpAPI) readBarrier(ctx context.Context, o structs.QueryOptions) error {
	rb, ok := h.b.(interface{ ReadBarrier(context.Context) error })
	if o.AllowStale || !ok {
		return nil
	}
	return rb.ReadBarrier(ctx)
}
