package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/droverhq/drover/structs"
)

// ACLPolicies is the /v1/acl/policies and /v1/acl/policy/<name> endpoints.
type ACLPolicies struct{ c *Client }

// ACLPolicies returns the ACL policy endpoints.
func (c *Client) ACLPolicies() *ACLPolicies { return &ACLPolicies{c: c} }

// List returns the policies the token may see (all, for a management
// token), sorted by name.
func (p *ACLPolicies) List(ctx context.Context, q *QueryOptions) ([]*structs.ACLPolicyListStub, *QueryMeta, error) {
	var out []*structs.ACLPolicyListStub
	meta, err := p.c.query(ctx, "/v1/acl/policies", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Info returns one policy, rules included.
func (p *ACLPolicies) Info(ctx context.Context, name string, q *QueryOptions) (*structs.ACLPolicy, *QueryMeta, error) {
	var out structs.ACLPolicy
	meta, err := p.c.query(ctx, "/v1/acl/policy/"+pathID(name), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Upsert creates or replaces a policy; its rules must parse.
func (p *ACLPolicies) Upsert(ctx context.Context, policy *structs.ACLPolicy, w *WriteOptions) (*WriteMeta, error) {
	if policy == nil || policy.Name == "" {
		return nil, errors.New("upsert ACL policy: missing name")
	}
	return p.c.write(ctx, http.MethodPost, "/v1/acl/policy/"+pathID(policy.Name), policy, nil, w, nil)
}

// Delete removes a policy.
func (p *ACLPolicies) Delete(ctx context.Context, name string, w *WriteOptions) (*WriteMeta, error) {
	return p.c.write(ctx, http.MethodDelete, "/v1/acl/policy/"+pathID(name), nil, nil, w, nil)
}

// ACLTokens is the /v1/acl/bootstrap, /v1/acl/tokens and
// /v1/acl/token/<accessor> endpoints.
type ACLTokens struct{ c *Client }

// ACLTokens returns the ACL token endpoints.
func (c *Client) ACLTokens() *ACLTokens { return &ACLTokens{c: c} }

// Bootstrap creates the first management token (once per cluster).
func (t *ACLTokens) Bootstrap(ctx context.Context, secret string, w *WriteOptions) (*structs.ACLToken, *WriteMeta, error) {
	var out structs.ACLToken
	var body any
	if secret != "" {
		body = map[string]string{"BootstrapSecret": secret}
	}
	meta, err := t.c.write(ctx, http.MethodPost, "/v1/acl/bootstrap", body, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// List returns the tokens, without their secrets.
func (t *ACLTokens) List(ctx context.Context, q *QueryOptions) ([]*structs.ACLTokenListStub, *QueryMeta, error) {
	var out []*structs.ACLTokenListStub
	meta, err := t.c.query(ctx, "/v1/acl/tokens", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Info returns one token by accessor, secret included.
func (t *ACLTokens) Info(ctx context.Context, accessor string, q *QueryOptions) (*structs.ACLToken, *QueryMeta, error) {
	var out structs.ACLToken
	meta, err := t.c.query(ctx, "/v1/acl/token/"+pathID(accessor), q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Self returns the token the client sends.
func (t *ACLTokens) Self(ctx context.Context, q *QueryOptions) (*structs.ACLToken, *QueryMeta, error) {
	var out structs.ACLToken
	meta, err := t.c.query(ctx, "/v1/acl/token/self", q, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Create creates a token and returns it with its secret.
func (t *ACLTokens) Create(ctx context.Context, token *structs.ACLToken, w *WriteOptions) (*structs.ACLToken, *WriteMeta, error) {
	var out structs.ACLToken
	meta, err := t.c.write(ctx, http.MethodPost, "/v1/acl/token", token, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Update changes a token's name or policies (never its secret or type).
func (t *ACLTokens) Update(ctx context.Context, token *structs.ACLToken, w *WriteOptions) (*structs.ACLToken, *WriteMeta, error) {
	if token == nil || token.AccessorID == "" {
		return nil, nil, errors.New("update ACL token: missing accessor ID")
	}
	var out structs.ACLToken
	meta, err := t.c.write(ctx, http.MethodPost, "/v1/acl/token/"+pathID(token.AccessorID), token, &out, w, nil)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// Delete removes a token.
func (t *ACLTokens) Delete(ctx context.Context, accessor string, w *WriteOptions) (*WriteMeta, error) {
	return t.c.write(ctx, http.MethodDelete, "/v1/acl/token/"+pathID(accessor), nil, nil, w, nil)
}
