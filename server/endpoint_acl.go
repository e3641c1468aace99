package server

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// aclEndpoint serves the "ACL" RPC methods: policies and tokens. Every
// method but Bootstrap and GetTokenSelf needs a management token; a
// client token may read the policies it holds.
type aclEndpoint struct{ srv *Server }

// Limits on what one request may write.
const (
	maxACLBatch       = 64
	maxACLNameLen     = 128
	maxACLDescription = 256
	maxTokenPolicies  = 64
)

func (s *Server) requireACLs(method string) error {
	if !s.config.ACLEnabled {
		return fmt.Errorf("%s: %w: ACL support disabled (acl { enabled = true } in the server's configuration)", method, structs.ErrInvalid)
	}
	return nil
}

// Bootstrap creates the first management token and returns it, secret
// included. It needs no token, and works once. To bootstrap again (the
// management secret was lost), an operator writes the index the refusal
// names to DataDir/acl-bootstrap-reset on the leader, as in Nomad: only
// someone with the leader's disk can reset; the file is removed after.
func (e *aclEndpoint) Bootstrap(args *structs.ACLTokenBootstrapRequest, reply *structs.ACLTokenUpsertResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLBootstrap, &err)
	if done, err := s.forward(structs.RPCACLBootstrap, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLBootstrap); err != nil {
		return err
	}
	secret := args.BootstrapSecret
	if secret == "" {
		secret = structs.GenerateUUID()
	} else if !structs.IsUUID(secret) {
		return fmt.Errorf("ACL bootstrap: %w: the bootstrap secret must be a UUID", structs.ErrInvalid)
	}
	token := &structs.ACLToken{
		AccessorID: structs.GenerateUUID(), SecretID: secret, Name: "Bootstrap Token",
		Type: structs.ACLManagementToken, Global: true, CreateTime: time.Now().UTC(),
	}
	resetIndex, resetFile := s.bootstrapResetIndex()
	req := &structs.ACLTokenBootstrapRequest{Token: token, ResetIndex: resetIndex, WriteRequest: args.WriteRequest}
	index, err := s.raftApply(structs.ACLTokenBootstrapType, req)
	if err != nil {
		return err
	}
	if resetFile != "" {
		if err := os.Remove(resetFile); err != nil {
			s.logger.Warn("ACL bootstrap: remove the reset file", "path", resetFile, "error", err)
		}
	}
	stored, err := s.State().ACLTokenByAccessor(nil, token.AccessorID)
	if err != nil {
		return err
	}
	reply.Tokens = []*structs.ACLToken{stored.Copy()}
	reply.Index = index
	s.logger.Info("ACL bootstrap done", "accessor", token.AccessorID)
	return nil
}

// aclBootstrapResetFile is the file, in the server's data dir, holding
// the index of the bootstrap to reset.
const aclBootstrapResetFile = "acl-bootstrap-reset"

// bootstrapResetIndex reads the reset file: the index in it, and its
// path (0 and "" when there is none or it does not hold a number).
func (s *Server) bootstrapResetIndex() (uint64, string) {
	path := filepath.Join(s.config.DataDir, aclBootstrapResetFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, ""
	}
	index, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		s.logger.Warn("ACL bootstrap: the reset file does not hold an index", "path", path)
		return 0, ""
	}
	return index, path
}

// UpsertPolicies creates or replaces policies; each one's rules must
// parse.
func (e *aclEndpoint) UpsertPolicies(args *structs.ACLPolicyUpsertRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLUpsertPolicies, &err)
	if done, err := s.forward(structs.RPCACLUpsertPolicies, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLUpsertPolicies); err != nil {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Policies) == 0 || len(args.Policies) > maxACLBatch {
		return fmt.Errorf("upsert ACL policies: %w: %d policies (1 to %d per request)", structs.ErrInvalid, len(args.Policies), maxACLBatch)
	}
	req := &structs.ACLPolicyUpsertRequest{WriteRequest: args.WriteRequest}
	for _, p := range args.Policies {
		if p == nil {
			return fmt.Errorf("upsert ACL policies: %w: a policy is null", structs.ErrInvalid)
		}
		if err := checkPolicyName(p.Name); err != nil {
			return err
		}
		if len(p.Description) > maxACLDescription {
			return fmt.Errorf("ACL policy %q: %w: description longer than %d bytes", p.Name, structs.ErrInvalid, maxACLDescription)
		}
		if _, err := acl.Parse(p.Name, p.Rules); err != nil {
			return fmt.Errorf("ACL policy %q: %w: %v", p.Name, structs.ErrInvalid, err)
		}
		req.Policies = append(req.Policies, &structs.ACLPolicy{Name: p.Name, Description: p.Description, Rules: p.Rules})
	}
	index, err := s.raftApply(structs.ACLPolicyUpsertRequestType, req)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// Bounds of a token's expiration TTL, Nomad's defaults.
const (
	minTokenTTL = time.Minute
	maxTokenTTL = 24 * time.Hour
)

// checkPolicyName checks a policy name as Nomad does: 1 to 128 letters,
// digits and dashes.
func checkPolicyName(name string) error {
	if name == "" || len(name) > maxACLNameLen {
		return fmt.Errorf("ACL policy name %q: %w: 1 to %d characters", name, structs.ErrInvalid, maxACLNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("ACL policy name %q: %w: only letters, digits and dashes", name, structs.ErrInvalid)
		}
	}
	return nil
}

// checkTokenName checks a token's name: at most 256 bytes of printable
// text (it is shown in lists and logs).
func checkTokenName(name string) error {
	if len(name) > 256 {
		return fmt.Errorf("ACL token name: %w: longer than 256 bytes", structs.ErrInvalid)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("ACL token name %q: %w: only printable characters", name, structs.ErrInvalid)
		}
	}
	return nil
}

// DeletePolicies removes policies by name.
func (e *aclEndpoint) DeletePolicies(args *structs.ACLPolicyDeleteRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLDeletePolicies, &err)
	if done, err := s.forward(structs.RPCACLDeletePolicies, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLDeletePolicies); err != nil {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Names) == 0 || len(args.Names) > maxACLBatch {
		return fmt.Errorf("delete ACL policies: %w: %d names (1 to %d per request)", structs.ErrInvalid, len(args.Names), maxACLBatch)
	}
	for _, name := range args.Names {
		p, err := s.State().ACLPolicyByName(nil, name)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("ACL policy %q: %w", name, structs.ErrNotFound)
		}
	}
	req := &structs.ACLPolicyDeleteRequest{Names: args.Names, WriteRequest: args.WriteRequest}
	index, err := s.raftApply(structs.ACLPolicyDeleteRequestType, req)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// GetPolicy returns one policy: a management token reads any, a client
// token the policies it holds.
func (e *aclEndpoint) GetPolicy(args *structs.ACLPolicySpecificRequest, reply *structs.SingleACLPolicyResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLGetPolicy, &err)
	if done, err := s.forward(structs.RPCACLGetPolicy, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLGetPolicy); err != nil {
		return err
	}
	a, token, err := s.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if !a.IsManagement() && (token == nil || !slices.Contains(token.Policies, args.Name)) {
		return errPermissionDenied
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableACLPolicies, func(ws memdb.WatchSet, st *state.StateStore) error {
		p, err := st.ACLPolicyByName(ws, args.Name)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("ACL policy %q: %w", args.Name, structs.ErrNotFound)
		}
		c := *p
		reply.Policy = &c
		return nil
	})
}

// ListPolicies lists policies: all for a management token, the ones it
// holds for a client token.
func (e *aclEndpoint) ListPolicies(args *structs.ACLPolicyListRequest, reply *structs.ACLPolicyListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLListPolicies, &err)
	if done, err := s.forward(structs.RPCACLListPolicies, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLListPolicies); err != nil {
		return err
	}
	a, token, err := s.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if !a.IsManagement() && token == nil {
		return errPermissionDenied
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableACLPolicies, func(ws memdb.WatchSet, st *state.StateStore) error {
		policies, err := st.ACLPolicies(ws, args.Prefix)
		if err != nil {
			return err
		}
		reply.Policies = make([]*structs.ACLPolicyListStub, 0, len(policies))
		for _, p := range policies {
			if a.IsManagement() || slices.Contains(token.Policies, p.Name) {
				reply.Policies = append(reply.Policies, p.Stub())
			}
		}
		return nil
	})
}

// UpsertTokens creates tokens (no AccessorID: new accessor and secret)
// or updates them (name, policies; never the secret or type). It returns
// them as stored, secrets included.
func (e *aclEndpoint) UpsertTokens(args *structs.ACLTokenUpsertRequest, reply *structs.ACLTokenUpsertResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLUpsertTokens, &err)
	if done, err := s.forward(structs.RPCACLUpsertTokens, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLUpsertTokens); err != nil {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Tokens) == 0 || len(args.Tokens) > maxACLBatch {
		return fmt.Errorf("upsert ACL tokens: %w: %d tokens (1 to %d per request)", structs.ErrInvalid, len(args.Tokens), maxACLBatch)
	}
	req := &structs.ACLTokenUpsertRequest{WriteRequest: args.WriteRequest}
	for _, in := range args.Tokens {
		t, err := e.prepareToken(in)
		if err != nil {
			return err
		}
		req.Tokens = append(req.Tokens, t)
	}
	index, err := s.raftApply(structs.ACLTokenUpsertRequestType, req)
	if err != nil {
		return err
	}
	for _, t := range req.Tokens {
		stored, err := s.State().ACLTokenByAccessor(nil, t.AccessorID)
		if err != nil {
			return err
		}
		reply.Tokens = append(reply.Tokens, stored.Copy())
	}
	reply.Index = index
	return nil
}

// prepareToken checks a token to create or update and returns what to
// store.
func (e *aclEndpoint) prepareToken(in *structs.ACLToken) (*structs.ACLToken, error) {
	if in == nil {
		return nil, fmt.Errorf("upsert ACL tokens: %w: a token is null", structs.ErrInvalid)
	}
	if in.Name != "" {
		if err := checkTokenName(in.Name); err != nil {
			return nil, err
		}
	}
	switch in.Type {
	case "", structs.ACLClientToken:
		if len(in.Policies) == 0 {
			return nil, fmt.Errorf("ACL token %q: %w: a client token needs at least one policy", in.Name, structs.ErrInvalid)
		}
	case structs.ACLManagementToken:
		if len(in.Policies) > 0 {
			return nil, fmt.Errorf("ACL token %q: %w: a management token takes no policies", in.Name, structs.ErrInvalid)
		}
	default:
		return nil, fmt.Errorf("ACL token %q: %w: type %q (client or management)", in.Name, structs.ErrInvalid, in.Type)
	}
	if len(in.Policies) > maxTokenPolicies {
		return nil, fmt.Errorf("ACL token %q: %w: %d policies (at most %d)", in.Name, structs.ErrInvalid, len(in.Policies), maxTokenPolicies)
	}
	for _, name := range in.Policies {
		if err := checkPolicyName(name); err != nil {
			return nil, err
		}
		p, err := e.srv.State().ACLPolicyByName(nil, name)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, fmt.Errorf("ACL token %q: %w: policy %q does not exist", in.Name, structs.ErrInvalid, name)
		}
	}
	t := in.Copy()
	if t.Type == "" {
		t.Type = structs.ACLClientToken
	}
	if t.AccessorID == "" {
		t.AccessorID = structs.GenerateUUID()
		t.SecretID = structs.GenerateUUID()
		t.CreateTime = time.Now().UTC()
		switch ttl := t.ExpirationTTL; {
		case ttl == 0:
		case ttl < minTokenTTL || ttl > maxTokenTTL:
			return nil, fmt.Errorf("ACL token %q: %w: expiration TTL %v (from %v to %v)", in.Name, structs.ErrInvalid, ttl, minTokenTTL, maxTokenTTL)
		case t.ExpirationTime != nil:
			return nil, fmt.Errorf("ACL token %q: %w: give an expiration TTL or an expiration time, not both", in.Name, structs.ErrInvalid)
		default:
			exp := t.CreateTime.Add(ttl)
			t.ExpirationTime = &exp
		}
		if t.ExpirationTime != nil && !t.ExpirationTime.After(t.CreateTime.Add(minTokenTTL-time.Second)) {
			return nil, fmt.Errorf("ACL token %q: %w: expiration time %v is not at least %v away", in.Name, structs.ErrInvalid, *t.ExpirationTime, minTokenTTL)
		}
		t.ExpirationTTL = 0
		return t, nil
	}
	existing, err := e.srv.State().ACLTokenByAccessor(nil, t.AccessorID)
	if err != nil {
		return nil, err
	}
	if existing == nil {
		return nil, fmt.Errorf("ACL token %s: %w", t.AccessorID, structs.ErrNotFound)
	}
	if t.Type != existing.Type {
		return nil, fmt.Errorf("ACL token %s: %w: a token's type cannot change", t.AccessorID, structs.ErrInvalid)
	}
	// The secret, creation and expiry of a token never change.
	t.SecretID, t.CreateTime, t.Global, t.ExpirationTime, t.ExpirationTTL = existing.SecretID, existing.CreateTime, existing.Global, existing.ExpirationTime, 0
	return t, nil
}

// DeleteTokens removes tokens by accessor.
func (e *aclEndpoint) DeleteTokens(args *structs.ACLTokenDeleteRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLDeleteTokens, &err)
	if done, err := s.forward(structs.RPCACLDeleteTokens, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLDeleteTokens); err != nil {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.AccessorIDs) == 0 || len(args.AccessorIDs) > maxACLBatch {
		return fmt.Errorf("delete ACL tokens: %w: %d accessors (1 to %d per request)", structs.ErrInvalid, len(args.AccessorIDs), maxACLBatch)
	}
	for _, id := range args.AccessorIDs {
		t, err := s.State().ACLTokenByAccessor(nil, id)
		if err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("ACL token %s: %w", id, structs.ErrNotFound)
		}
	}
	req := &structs.ACLTokenDeleteRequest{AccessorIDs: args.AccessorIDs, WriteRequest: args.WriteRequest}
	index, err := s.raftApply(structs.ACLTokenDeleteRequestType, req)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// GetToken returns one token by accessor, secret included: a management
// token reads any, a client token only itself.
func (e *aclEndpoint) GetToken(args *structs.ACLTokenSpecificRequest, reply *structs.SingleACLTokenResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLGetToken, &err)
	if done, err := s.forward(structs.RPCACLGetToken, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLGetToken); err != nil {
		return err
	}
	a, token, err := s.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if !a.IsManagement() && (token == nil || token.AccessorID != args.AccessorID) {
		return errPermissionDenied
	}
	return s.readToken(args.QueryOptions, &reply.QueryMeta, args.AccessorID, reply)
}

// GetTokenSelf returns the request's own token.
func (e *aclEndpoint) GetTokenSelf(args *structs.ACLTokenSelfRequest, reply *structs.SingleACLTokenResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLGetTokenSelf, &err)
	if done, err := s.forward(structs.RPCACLGetTokenSelf, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLGetTokenSelf); err != nil {
		return err
	}
	_, token, err := s.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if token == nil {
		return fmt.Errorf("%w: no ACL token in the request", structs.ErrPermissionDenied)
	}
	return s.readToken(args.QueryOptions, &reply.QueryMeta, token.AccessorID, reply)
}

func (s *Server) readToken(q structs.QueryOptions, meta *structs.QueryMeta, accessor string, reply *structs.SingleACLTokenResponse) error {
	return s.blockingTableRead(q, meta, state.TableACLTokens, func(ws memdb.WatchSet, st *state.StateStore) error {
		t, err := st.ACLTokenByAccessor(ws, accessor)
		if err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("ACL token %s: %w", accessor, structs.ErrNotFound)
		}
		reply.Token = t.Copy()
		return nil
	})
}

// ListTokens lists tokens without their secrets; it needs a management
// token.
func (e *aclEndpoint) ListTokens(args *structs.ACLTokenListRequest, reply *structs.ACLTokenListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLListTokens, &err)
	if done, err := s.forward(structs.RPCACLListTokens, args, reply); done {
		return err
	}
	if err := s.requireACLs(structs.RPCACLListTokens); err != nil {
		return err
	}
	if err := s.requireManagement(args.AuthToken); err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableACLTokens, func(ws memdb.WatchSet, st *state.StateStore) error {
		tokens, err := st.ACLTokens(ws, args.Prefix)
		if err != nil {
			return err
		}
		reply.Tokens = make([]*structs.ACLTokenListStub, 0, len(tokens))
		for _, t := range tokens {
			if !args.GlobalOnly || t.Global {
				reply.Tokens = append(reply.Tokens, t.Stub())
			}
		}
		return nil
	})
}

// ResolveToken answers an agent that checks a request to one of its own
// endpoints (agent, members, join, parse): the token's type and
// policies. An unknown or expired token is refused.
func (e *aclEndpoint) ResolveToken(args *structs.ACLTokenSelfRequest, reply *structs.ResolveACLTokenResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCACLResolveToken, &err)
	if done, err := s.forward(structs.RPCACLResolveToken, args, reply); done {
		return err
	}
	if !s.config.ACLEnabled {
		reply.Disabled = true
		return nil
	}
	_, token, err := s.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	names := []string{AnonymousPolicy}
	if token != nil {
		reply.Token = token.Stub()
		reply.Management = token.IsManagement()
		names = token.Policies
	}
	for _, name := range names {
		p, err := s.State().ACLPolicyByName(nil, name)
		if err != nil {
			return err
		}
		if p != nil {
			c := *p
			reply.Policies = append(reply.Policies, &c)
		}
	}
	s.setQueryMeta(&reply.QueryMeta)
	return nil
}
