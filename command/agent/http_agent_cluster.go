package agent

import (
	"net/http"
	"strconv"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// clusterBackend is what the cluster routes need beyond backend: the
// local server's serf pool. An agent without a server answers 501.
type clusterBackend interface {
	Members() (*structs.ServerMembersResponse, error)
	Join(addrs []string) (int, error)
	ForceLeave(node string, prune bool) error
}

var _ clusterBackend = (*Agent)(nil)

// joinResponse is Nomad's answer to /v1/agent/join.
type joinResponse struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error"`
}

// clusterRoutes serves server membership (the agent's serf pool) and the
// Raft configuration, in Nomad's shapes.
func (h *httpAPI) clusterRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/agent/members", h.wrap(h.agentMembers))
	m.HandleFunc("PUT /v1/agent/join", h.wrap(h.agentJoin))
	m.HandleFunc("POST /v1/agent/join", h.wrap(h.agentJoin))
	m.HandleFunc("PUT /v1/agent/force-leave", h.wrap(h.agentForceLeave))
	m.HandleFunc("POST /v1/agent/force-leave", h.wrap(h.agentForceLeave))
	m.HandleFunc("GET /v1/operator/raft/configuration", h.wrap(h.raftConfiguration))
	m.HandleFunc("DELETE /v1/operator/raft/peer", h.wrap(h.raftRemovePeer))
}

func (h *httpAPI) cluster() (clusterBackend, error) {
	if cb, ok := h.b.(clusterBackend); ok {
		return cb, nil
	}
	return nil, errorf(http.StatusNotImplemented, "this agent runs no server; ask a server agent")
}

// agentMembers answers {"ServerName", "ServerRegion", "ServerDC",
// "Members": [...]}: the servers in this agent's serf pool.
func (h *httpAPI) agentMembers(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := h.authorizeAgent(r, (*acl.ACL).AllowNodeRead); err != nil {
		return nil, err
	}
	cb, err := h.cluster()
	if err != nil {
		return nil, err
	}
	return cb.Members()
}

// agentJoin joins this agent's server to the serf addresses in
// ?address= (repeatable) and answers {"num_joined": N, "error": ""}.
func (h *httpAPI) agentJoin(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := h.authorizeAgent(r, (*acl.ACL).AllowAgentWrite); err != nil {
		return nil, err
	}
	addrs := r.URL.Query()["address"]
	if len(addrs) == 0 {
		return nil, errorf(http.StatusBadRequest, "join: give the servers' serf addresses as ?address=host:port")
	}
	cb, err := h.cluster()
	if err != nil {
		return nil, err
	}
	n, err := cb.Join(addrs)
	if err != nil && n == 0 {
		return nil, errorf(http.StatusBadGateway, "%v", err)
	}
	out := &joinResponse{NumJoined: n}
	if err != nil {
		out.Error = err.Error()
	}
	return out, nil
}

// agentForceLeave marks the failed server ?node= as left (?prune=true
// also forgets it), so the leader removes it from Raft.
func (h *httpAPI) agentForceLeave(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := h.authorizeAgent(r, (*acl.ACL).AllowAgentWrite); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	node := q.Get("node")
	if node == "" {
		return nil, errorf(http.StatusBadRequest, "force-leave: give the server's name as ?node=")
	}
	prune := false
	if v := q.Get("prune"); v != "" {
		var err error
		if prune, err = strconv.ParseBool(v); err != nil {
			return nil, errorf(http.StatusBadRequest, "force-leave: prune %q is not a boolean", v)
		}
	}
	cb, err := h.cluster()
	if err != nil {
		return nil, err
	}
	if err := cb.ForceLeave(node, prune); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// raftConfiguration answers {"Servers": [{ID, Node, Address, Leader,
// Voter, RaftProtocol}], "Index": N}.
func (h *httpAPI) raftConfiguration(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var resp structs.RaftConfigurationResponse
	if err := h.rpc(r, structs.RPCClusterRaftConfiguration, &structs.RaftConfigurationRequest{QueryOptions: o}, &resp); err != nil {
		return nil, err
	}
	// An answer means a leader (or, with ?stale, this server) gave it.
	setMeta(w, structs.QueryMeta{Index: resp.Index, KnownLeader: true})
	return &resp, nil
}

// raftRemovePeer removes the Raft peer given by ?id= or ?address=.
func (h *httpAPI) raftRemovePeer(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	id, addr := q.Get("id"), q.Get("address")
	switch {
	case id == "" && addr == "":
		return nil, errorf(http.StatusBadRequest, "remove peer: give ?id= or ?address=")
	case id != "" && addr != "":
		return nil, errorf(http.StatusBadRequest, "remove peer: give ?id= or ?address=, not both")
	}
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	req := &structs.RaftPeerRemoveRequest{ID: id, Address: addr, WriteRequest: structs.WriteRequest{Region: o.Region}}
	var resp structs.GenericResponse
	if err := h.rpc(r, structs.RPCClusterRemoveRaftPeer, req, &resp); err != nil {
		return nil, err
	}
	setIndex(w, resp.Index)
	return struct{}{}, nil
}

// Members lists the local server's serf pool.
func (a *Agent) Members() (*structs.ServerMembersResponse, error) {
	if a.server == nil {
		return nil, errorf(http.StatusNotImplemented, "this agent runs no server; ask a server agent for the members")
	}
	return a.server.Members(), nil
}

// Join joins the local server to other servers' serf addresses.
func (a *Agent) Join(addrs []string) (int, error) {
	if a.server == nil {
		return 0, errorf(http.StatusNotImplemented, "this agent runs no server; only servers join the pool")
	}
	return a.server.Join(addrs)
}

// ForceLeave marks a failed server as left.
func (a *Agent) ForceLeave(node string, prune bool) error {
	if a.server == nil {
		return errorf(http.StatusNotImplemented, "this agent runs no server; ask a server agent")
	}
	return a.server.ForceLeave(node, prune)
}
