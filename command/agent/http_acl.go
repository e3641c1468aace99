package agent

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// aclRoutes serves ACL policies and tokens in Nomad's shapes.
func (h *httpAPI) aclRoutes(m *routeMux) {
	m.HandleFunc("POST /v1/acl/bootstrap", h.wrap(h.aclBootstrap))
	m.HandleFunc("PUT /v1/acl/bootstrap", h.wrap(h.aclBootstrap))
	m.HandleFunc("GET /v1/acl/policies", h.wrap(h.aclPolicies))
	m.HandleFunc("GET /v1/acl/policy/{name}", h.wrap(h.aclPolicyRead))
	m.HandleFunc("POST /v1/acl/policy/{name}", h.wrap(h.aclPolicyUpsert))
	m.HandleFunc("PUT /v1/acl/policy/{name}", h.wrap(h.aclPolicyUpsert))
	m.HandleFunc("DELETE /v1/acl/policy/{name}", h.wrap(h.aclPolicyDelete))
	m.HandleFunc("GET /v1/acl/tokens", h.wrap(h.aclTokens))
	m.HandleFunc("POST /v1/acl/token", h.wrap(h.aclTokenUpsert))
	m.HandleFunc("PUT /v1/acl/token", h.wrap(h.aclTokenUpsert))
	m.HandleFunc("GET /v1/acl/token/self", h.wrap(h.aclTokenSelf))
	m.HandleFunc("GET /v1/acl/token/{accessor}", h.wrap(h.aclTokenRead))
	m.HandleFunc("POST /v1/acl/token/{accessor}", h.wrap(h.aclTokenUpsert))
	m.HandleFunc("PUT /v1/acl/token/{accessor}", h.wrap(h.aclTokenUpsert))
	m.HandleFunc("DELETE /v1/acl/token/{accessor}", h.wrap(h.aclTokenDelete))
}

func (h *httpAPI) aclBootstrap(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct{ BootstrapSecret string }
	if r.ContentLength != 0 {
		if err := h.decodeBody(r, &body); err != nil {
			return nil, err
		}
	}
	req := &structs.ACLTokenBootstrapRequest{BootstrapSecret: body.BootstrapSecret, WriteRequest: structs.WriteRequest{Region: r.URL.Query().Get("region")}}
	var reply structs.ACLTokenUpsertResponse
	if err := h.write(w, r, structs.RPCACLBootstrap, req, &reply, &reply.Index); err != nil {
		return nil, err
	}
	if len(reply.Tokens) != 1 {
		return nil, errorf(http.StatusInternalServerError, "bootstrap returned %d tokens", len(reply.Tokens))
	}
	return reply.Tokens[0], nil
}

func (h *httpAPI) aclPolicies(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.ACLPolicyListResponse
	if err := h.read(w, r, structs.RPCACLListPolicies, &structs.ACLPolicyListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Policies), nil
}

func (h *httpAPI) aclPolicyRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SingleACLPolicyResponse
	req := &structs.ACLPolicySpecificRequest{Name: r.PathValue("name"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCACLGetPolicy, req, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Policy, nil
}

// aclPolicyUpsert takes an ACLPolicy body; its name, when given, must be
// the path's.
func (h *httpAPI) aclPolicyUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var p structs.ACLPolicy
	if err := h.decodeBody(r, &p); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if p.Name == "" {
		p.Name = name
	}
	if p.Name != name {
		return nil, errorf(http.StatusBadRequest, "policy name %q in the body does not match %q in the path", p.Name, name)
	}
	req := &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{&p}, WriteRequest: structs.WriteRequest{Region: r.URL.Query().Get("region")}}
	var reply structs.GenericResponse
	if err := h.write(w, r, structs.RPCACLUpsertPolicies, req, &reply, &reply.Index); err != nil {
		return nil, err
	}
	return nil, nil
}

func (h *httpAPI) aclPolicyDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	req := &structs.ACLPolicyDeleteRequest{Names: []string{r.PathValue("name")}, WriteRequest: structs.WriteRequest{Region: r.URL.Query().Get("region")}}
	var reply structs.GenericResponse
	if err := h.write(w, r, structs.RPCACLDeletePolicies, req, &reply, &reply.Index); err != nil {
		return nil, err
	}
	return nil, nil
}

func (h *httpAPI) aclTokens(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.ACLTokenListResponse
	if err := h.read(w, r, structs.RPCACLListTokens, &structs.ACLTokenListRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return orEmpty(reply.Tokens), nil
}

func (h *httpAPI) aclTokenRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SingleACLTokenResponse
	req := &structs.ACLTokenSpecificRequest{AccessorID: r.PathValue("accessor"), QueryOptions: o}
	if err := h.read(w, r, structs.RPCACLGetToken, req, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Token, nil
}

func (h *httpAPI) aclTokenSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := parseQuery(r)
	if err != nil {
		return nil, err
	}
	var reply structs.SingleACLTokenResponse
	if err := h.read(w, r, structs.RPCACLGetTokenSelf, &structs.ACLTokenSelfRequest{QueryOptions: o}, &reply, &reply.QueryMeta); err != nil {
		return nil, err
	}
	return reply.Token, nil
}

// aclTokenUpsert creates a token (POST /v1/acl/token) or updates one
// (POST /v1/acl/token/<accessor>); it answers the token as stored.
func (h *httpAPI) aclTokenUpsert(w http.ResponseWriter, r *http.Request) (any, error) {
	var t structs.ACLToken
	if err := h.decodeBody(r, &t); err != nil {
		return nil, err
	}
	accessor := r.PathValue("accessor")
	if accessor != "" && t.AccessorID != "" && t.AccessorID != accessor {
		return nil, errorf(http.StatusBadRequest, "token accessor %q in the body does not match %q in the path", t.AccessorID, accessor)
	}
	t.AccessorID = accessor
	t.SecretID = ""
	req := &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{&t}, WriteRequest: structs.WriteRequest{Region: r.URL.Query().Get("region")}}
	var reply structs.ACLTokenUpsertResponse
	if err := h.write(w, r, structs.RPCACLUpsertTokens, req, &reply, &reply.Index); err != nil {
		return nil, err
	}
	if len(reply.Tokens) != 1 {
		return nil, errorf(http.StatusInternalServerError, "token upsert returned %d tokens", len(reply.Tokens))
	}
	return reply.Tokens[0], nil
}

func (h *httpAPI) aclTokenDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	req := &structs.ACLTokenDeleteRequest{AccessorIDs: []string{r.PathValue("accessor")}, WriteRequest: structs.WriteRequest{Region: r.URL.Query().Get("region")}}
	var reply structs.GenericResponse
	if err := h.write(w, r, structs.RPCACLDeleteTokens, req, &reply, &reply.Index); err != nil {
		return nil, err
	}
	return nil, nil
}

// agentACLTTL is how long an agent keeps a token's resolved ACL for its
// own endpoints; a revoked token may act on them for this long.
const agentACLTTL = 30 * time.Second

// agentACLCacheSize bounds the tokens an agent keeps resolved.
const agentACLCacheSize = 1024

type agentACLEntry struct {
	acl      *acl.ACL
	accessor string
	expires  time.Time
}

// agentACLs caches resolved ACLs for the agent's own endpoints (agent,
// members, join, parse), which no server endpoint checks.
type agentACLs struct {
	mu      sync.Mutex
	entries map[string]agentACLEntry
}

// authorizeAgent checks a request to one of the agent's own endpoints
// against the token's ACL, resolved by the servers (ACL.ResolveToken).
func (h *httpAPI) authorizeAgent(r *http.Request, allow func(*acl.ACL) bool) error {
	if !h.aclEnabled {
		return nil
	}
	e, err := h.resolveCached(r)
	if err != nil {
		return err
	}
	if e.acl == nil || !allow(e.acl) {
		return structs.ErrPermissionDenied
	}
	return nil
}

// resolveCached returns the request token's entry, asking the servers
// when it is not cached or expired. A token the servers refuse is kept
// too (nil ACL, accessor "unknown"), so that a bad token cannot make
// every request cost a server call; other failures are not kept.
func (h *httpAPI) resolveCached(r *http.Request) (agentACLEntry, error) {
	token := requestToken(r)
	c := &h.acls
	c.mu.Lock()
	e, ok := c.entries[token]
	c.mu.Unlock()
	if ok && time.Now().Before(e.expires) {
		return e, nil
	}
	var reply structs.ResolveACLTokenResponse
	err := h.rpc(r, structs.RPCACLResolveToken, &structs.ACLTokenSelfRequest{QueryOptions: structs.QueryOptions{AllowStale: true}}, &reply)
	switch {
	case err == nil:
		e = agentACLEntry{acl: compileResolved(&reply), accessor: structs.AnonymousTokenID}
		if reply.Token != nil {
			e.accessor = reply.Token.AccessorID
		}
	case errors.Is(err, structs.ErrPermissionDenied):
		e = agentACLEntry{accessor: "unknown"}
	default:
		return agentACLEntry{}, err
	}
	e.expires = time.Now().Add(agentACLTTL)
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= agentACLCacheSize {
		c.entries = map[string]agentACLEntry{}
	}
	c.entries[token] = e
	c.mu.Unlock()
	return e, nil
}

// compileResolved builds the ACL a server's ResolveToken answer grants.
func compileResolved(reply *structs.ResolveACLTokenResponse) *acl.ACL {
	if reply.Disabled || reply.Management {
		return acl.ManagementACL
	}
	var policies []*acl.Policy
	for _, p := range reply.Policies {
		if parsed, err := acl.Parse(p.Name, p.Rules); err == nil {
			policies = append(policies, parsed)
		}
	}
	return acl.New(false, policies)
}
