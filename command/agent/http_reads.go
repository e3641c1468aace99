package agent

import (
	"net/http"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

func (h *httpAPI) allocsList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.AllocListResponse
	if err := h.read(w, r, structs.RPCAllocList, &structs.AllocListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Allocations), nil
}

func (h *httpAPI) allocRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SingleAllocResponse
	args := &structs.AllocSpecificRequest{AllocID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCAllocGetAlloc, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Alloc, nil
}

// lookupAlloc resolves an allocation ID or unique prefix through the
// servers.
func (h *httpAPI) lookupAlloc(r *http.Request, id string) (*structs.Allocation, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	o.MinQueryIndex = 0
	var reply structs.SingleAllocResponse
	if err := h.rpc(r, structs.RPCAllocGetAlloc, &structs.AllocSpecificRequest{AllocID: id, QueryOptions: o}, &reply); err != nil {
		return nil, err
	}
	return reply.Alloc, nil
}

func (h *httpAPI) evalsList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.EvalListResponse
	if err := h.read(w, r, structs.RPCEvalList, &structs.EvalListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Evaluations), nil
}

func (h *httpAPI) evalRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SingleEvalResponse
	args := &structs.EvalSpecificRequest{EvalID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCEvalGetEval, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Eval, nil
}

func (h *httpAPI) evalAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.EvalAllocationsResponse
	args := &structs.EvalSpecificRequest{EvalID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCEvalAllocations, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Allocations), nil
}

func (h *httpAPI) nodesList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.NodeListResponse
	if err := h.read(w, r, structs.RPCNodeList, &structs.NodeListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Nodes), nil
}

func (h *httpAPI) nodeRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SingleNodeResponse
	args := &structs.NodeSpecificRequest{NodeID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCNodeGetNode, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Node, nil
}

func (h *httpAPI) nodeAllocs(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.NodeAllocsResponse
	args := &structs.NodeSpecificRequest{NodeID: r.PathValue("id"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCNodeGetNodeAllocs, args, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Allocs), nil
}

func (h *httpAPI) statusLeader(w http.ResponseWriter, r *http.Request) (any, error) {
	var leader string
	if err := h.rpc(r, structs.RPCStatusLeader, &structs.GenericRequest{QueryOptions: structs.QueryOptions{AllowStale: true}}, &leader); err != nil {
		return nil, err
	}
	return leader, nil
}

func (h *httpAPI) statusPeers(w http.ResponseWriter, r *http.Request) (any, error) {
	var peers []string
	if err := h.rpc(r, structs.RPCStatusPeers, &structs.GenericRequest{QueryOptions: structs.QueryOptions{AllowStale: true}}, &peers); err != nil {
		return nil, err
	}
	return orEmpty(peers), nil
}

func (h *httpAPI) regions(w http.ResponseWriter, r *http.Request) (any, error) {
	var regions []string
	if err := h.rpc(r, structs.RPCStatusRegions, &structs.GenericRequest{QueryOptions: structs.QueryOptions{AllowStale: true}}, &regions); err != nil {
		return nil, err
	}
	return orEmpty(regions), nil
}

func (h *httpAPI) agentSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := h.authorizeAgent(r, (*acl.ACL).AllowAgentRead); err != nil {
		return nil, err
	}
	return h.b.Self(), nil
}
