package structs

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// Raft message types of ACL policies and tokens; never renumber.
const (
	ACLPolicyUpsertRequestType MessageType = 50
	ACLPolicyDeleteRequestType MessageType = 51
	ACLTokenUpsertRequestType  MessageType = 52
	ACLTokenDeleteRequestType  MessageType = 53
	ACLTokenBootstrapType      MessageType = 54
)

// RPC methods of the ACL endpoint.
const (
	RPCACLBootstrap      = "ACL.Bootstrap"      // ACLTokenBootstrapRequest -> ACLTokenUpsertResponse
	RPCACLUpsertPolicies = "ACL.UpsertPolicies" // ACLPolicyUpsertRequest -> GenericResponse
	RPCACLDeletePolicies = "ACL.DeletePolicies" // ACLPolicyDeleteRequest -> GenericResponse
	RPCACLGetPolicy      = "ACL.GetPolicy"      // ACLPolicySpecificRequest -> SingleACLPolicyResponse
	RPCACLListPolicies   = "ACL.ListPolicies"   // ACLPolicyListRequest -> ACLPolicyListResponse
	RPCACLUpsertTokens   = "ACL.UpsertTokens"   // ACLTokenUpsertRequest -> ACLTokenUpsertResponse
	RPCACLDeleteTokens   = "ACL.DeleteTokens"   // ACLTokenDeleteRequest -> GenericResponse
	RPCACLGetToken       = "ACL.GetToken"       // ACLTokenSpecificRequest -> SingleACLTokenResponse
	RPCACLGetTokenSelf   = "ACL.GetTokenSelf"   // ACLTokenSelfRequest -> SingleACLTokenResponse
	RPCACLListTokens     = "ACL.ListTokens"     // ACLTokenListRequest -> ACLTokenListResponse
	RPCACLResolveToken   = "ACL.ResolveToken"   // ACLTokenSelfRequest -> ResolveACLTokenResponse
)

// ResolveACLTokenResponse is what an agent needs to check its own
// endpoints' requests: whether ACLs are on, the token (without its
// secret; nil for anonymous) and the policies it holds. With ACLs off
// it is only Disabled.
type ResolveACLTokenResponse struct {
	Disabled   bool
	Management bool
	Token      *ACLTokenListStub
	Policies   []*ACLPolicy
	QueryMeta
}

// Token types, as Nomad names them.
const (
	ACLClientToken     = "client"
	ACLManagementToken = "management"
)

// AnonymousTokenID is the accessor that audit lines and errors name for
// a request that carried no token.
const AnonymousTokenID = "anonymous"

// ACLPolicy is a named set of rules in Nomad's HCL policy language (see
// package acl). Rules is kept as written; the server parses it when it
// is applied, so a stored policy always parses.
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string
	// Hash covers Name, Description and Rules.
	Hash        []byte
	CreateIndex uint64
	ModifyIndex uint64
}

// SetHash computes the policy's Hash.
func (p *ACLPolicy) SetHash() []byte {
	h := sha256.New()
	for _, s := range []string{p.Name, p.Description, p.Rules} {
		writeHashString(h, s)
	}
	p.Hash = h.Sum(nil)
	return p.Hash
}

// Stub returns the policy's list form.
func (p *ACLPolicy) Stub() *ACLPolicyListStub {
	return &ACLPolicyListStub{Name: p.Name, Description: p.Description, Hash: p.Hash,
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

// ACLPolicyListStub is a policy in a list: no rules.
type ACLPolicyListStub struct {
	Name        string
	Description string
	Hash        []byte
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLToken is a credential: the AccessorID names it (in lists, logs and
// audit lines), the SecretID proves it and is never listed or logged.
// A management token may do anything; a client token may do what its
// policies grant.
type ACLToken struct {
	AccessorID     string
	SecretID       string
	Name           string
	Type           string
	Policies       []string
	Global         bool
	CreateTime     time.Time
	ExpirationTime *time.Time `json:",omitempty"`
	// ExpirationTTL, on creation, sets ExpirationTime to the creation
	// time plus it (Nomad's field; nanoseconds in JSON).
	ExpirationTTL time.Duration `json:",omitempty"`
	Hash          []byte
	CreateIndex   uint64
	ModifyIndex   uint64
}

// IsManagement reports whether the token may do anything.
func (t *ACLToken) IsManagement() bool { return t != nil && t.Type == ACLManagementToken }

// IsExpired reports whether the token has expired at now.
func (t *ACLToken) IsExpired(now time.Time) bool {
	return t != nil && t.ExpirationTime != nil && !t.ExpirationTime.IsZero() && !now.Before(*t.ExpirationTime)
}

// SetHash computes the token's Hash over everything but its indexes.
func (t *ACLToken) SetHash() []byte {
	h := sha256.New()
	for _, s := range append([]string{t.AccessorID, t.SecretID, t.Name, t.Type}, t.Policies...) {
		writeHashString(h, s)
	}
	if t.Global {
		h.Write([]byte{1})
	}
	if t.ExpirationTime != nil {
		_ = binary.Write(h, binary.BigEndian, t.ExpirationTime.UnixNano())
	}
	t.Hash = h.Sum(nil)
	return t.Hash
}

// Copy returns a deep copy (nil for nil).
func (t *ACLToken) Copy() *ACLToken {
	if t == nil {
		return nil
	}
	c := *t
	c.Policies = append([]string(nil), t.Policies...)
	c.Hash = append([]byte(nil), t.Hash...)
	if t.ExpirationTime != nil {
		e := *t.ExpirationTime
		c.ExpirationTime = &e
	}
	return &c
}

// Stub returns the token's list form, without its secret.
func (t *ACLToken) Stub() *ACLTokenListStub {
	return &ACLTokenListStub{AccessorID: t.AccessorID, Name: t.Name, Type: t.Type,
		Policies: append([]string(nil), t.Policies...), Global: t.Global, Hash: t.Hash,
		CreateTime: t.CreateTime, ExpirationTime: t.ExpirationTime,
		CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex}
}

// ACLTokenListStub is a token in a list: never its secret.
type ACLTokenListStub struct {
	AccessorID     string
	Name           string
	Type           string
	Policies       []string
	Global         bool
	Hash           []byte
	CreateTime     time.Time
	ExpirationTime *time.Time `json:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

func writeHashString(h interface{ Write([]byte) (int, error) }, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	_, _ = h.Write(n[:])
	_, _ = h.Write([]byte(s))
}

// ACLPolicyUpsertRequest creates or replaces policies.
type ACLPolicyUpsertRequest struct {
	Policies []*ACLPolicy
	WriteRequest
}

// ACLPolicyDeleteRequest deletes policies by name.
type ACLPolicyDeleteRequest struct {
	Names []string
	WriteRequest
}

// ACLPolicySpecificRequest reads one policy.
type ACLPolicySpecificRequest struct {
	Name string
	QueryOptions
}

// SingleACLPolicyResponse is one policy (nil when there is none).
type SingleACLPolicyResponse struct {
	Policy *ACLPolicy
	QueryMeta
}

// ACLPolicyListRequest lists policies (Prefix filters by name).
type ACLPolicyListRequest struct {
	QueryOptions
}

// ACLPolicyListResponse lists policies.
type ACLPolicyListResponse struct {
	Policies []*ACLPolicyListStub
	QueryMeta
}

// ACLTokenBootstrapRequest creates the first management token.
// BootstrapSecret is an operator-chosen secret for the new token (""
// makes a random one). Token and ResetIndex are set by the leader for
// the Raft entry: a caller's are ignored (a reset needs the leader's
// reset file, see server.aclBootstrapResetFile).
type ACLTokenBootstrapRequest struct {
	Token           *ACLToken
	ResetIndex      uint64
	BootstrapSecret string
	WriteRequest
}

// ACLTokenUpsertRequest creates tokens (empty AccessorID) or updates
// them (the secret and type of an existing token never change).
type ACLTokenUpsertRequest struct {
	Tokens []*ACLToken
	WriteRequest
}

// ACLTokenUpsertResponse returns the tokens as stored, secrets included
// (the caller created them).
type ACLTokenUpsertResponse struct {
	Tokens []*ACLToken
	WriteMeta
}

// ACLTokenDeleteRequest deletes tokens by accessor.
type ACLTokenDeleteRequest struct {
	AccessorIDs []string
	WriteRequest
}

// ACLTokenSpecificRequest reads one token by accessor.
type ACLTokenSpecificRequest struct {
	AccessorID string
	QueryOptions
}

// ACLTokenSelfRequest reads the token of the request's AuthToken.
type ACLTokenSelfRequest struct {
	QueryOptions
}

// SingleACLTokenResponse is one token (nil when there is none).
type SingleACLTokenResponse struct {
	Token *ACLToken
	QueryMeta
}

// ACLTokenListRequest lists tokens (Prefix filters by accessor).
type ACLTokenListRequest struct {
	GlobalOnly bool
	QueryOptions
}

// ACLTokenListResponse lists tokens, without secrets.
type ACLTokenListResponse struct {
	Tokens []*ACLTokenListStub
	QueryMeta
}
