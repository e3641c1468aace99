package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// AgentMember is a server in the serf pool.
type AgentMember = structs.ServerMember

// ServerMembers is the answer of /v1/agent/members: the serf pool as the
// agent's server sees it.
type ServerMembers = structs.ServerMembersResponse

// JoinResponse is the answer of /v1/agent/join.
type JoinResponse struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error"`
}

// Members lists the servers in the agent's serf pool.
func (a *Agent) Members(ctx context.Context) (*ServerMembers, error) {
	var out ServerMembers
	if _, err := a.c.query(ctx, "/v1/agent/members", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Join joins the agent's server to the servers at the serf addresses
// ("host:port") and returns how many it reached. Reaching some but not
// all is no error: the answer's Error says what failed.
func (a *Agent) Join(ctx context.Context, addrs ...string) (*JoinResponse, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("join: no addresses")
	}
	var out JoinResponse
	params := url.Values{"address": addrs}
	if _, err := a.c.write(ctx, http.MethodPut, "/v1/agent/join", nil, &out, nil, params); err != nil {
		return nil, err
	}
	return &out, nil
}

// ForceLeave marks the failed server node ("name" or "name.region") as
// left, so the leader removes it from Raft; prune also forgets it.
func (a *Agent) ForceLeave(ctx context.Context, node string, prune bool) error {
	params := url.Values{"node": {node}}
	if prune {
		params.Set("prune", strconv.FormatBool(prune))
	}
	_, err := a.c.write(ctx, http.MethodPut, "/v1/agent/force-leave", nil, nil, nil, params)
	return err
}

// KeyringResponse is the answer of /v1/agent/keyring/*: each gossip key
// with how many servers hold it.
type KeyringResponse = structs.KeyringResponse

// ListKeys lists the servers' gossip encryption keys.
func (a *Agent) ListKeys(ctx context.Context) (*KeyringResponse, error) {
	var out KeyringResponse
	if _, err := a.c.query(ctx, "/v1/agent/keyring/list", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// InstallKey adds a gossip key (base64) to every server's keyring.
func (a *Agent) InstallKey(ctx context.Context, key string) (*KeyringResponse, error) {
	return a.keyringOp(ctx, "install", key)
}

// UseKey makes an installed gossip key the one servers encrypt with.
func (a *Agent) UseKey(ctx context.Context, key string) (*KeyringResponse, error) {
	return a.keyringOp(ctx, "use", key)
}

// RemoveKey removes a gossip key that is not in use from every server.
func (a *Agent) RemoveKey(ctx context.Context, key string) (*KeyringResponse, error) {
	return a.keyringOp(ctx, "remove", key)
}

func (a *Agent) keyringOp(ctx context.Context, op, key string) (*KeyringResponse, error) {
	var out KeyringResponse
	in := map[string]string{"Key": key}
	if _, err := a.c.write(ctx, http.MethodPut, "/v1/agent/keyring/"+op, in, &out, nil, nil); err != nil {
		return nil, err
	}
	return &out, nil
}
