package api

import "context"

// Status is the /v1/status endpoints.
type Status struct{ c *Client }

// Status returns the status endpoints.
func (c *Client) Status() *Status { return &Status{c: c} }

// Leader returns the leader server's RPC address, "" when there is none.
func (s *Status) Leader(ctx context.Context) (string, error) {
	var out string
	if _, err := s.c.query(ctx, "/v1/status/leader", nil, &out); err != nil {
		return "", err
	}
	return out, nil
}

// Peers returns the Raft peers' addresses.
func (s *Status) Peers(ctx context.Context) ([]string, error) {
	var out []string
	if _, err := s.c.query(ctx, "/v1/status/peers", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Agent is the /v1/agent endpoints.
type Agent struct{ c *Client }

// Agent returns the agent endpoints.
func (c *Client) Agent() *Agent { return &Agent{c: c} }

// AgentSelf is the answer of /v1/agent/self. Its parts are loosely typed:
// they describe the agent's configuration, which grows over time.
type AgentSelf struct {
	Config map[string]any `json:"config"`
	Member map[string]any `json:"member"`
	// Stats is Nomad's shape: "agent" (server, client), "nomad" (the
	// server's leader, leader_addr), "client" (node_id); values are strings.
	Stats map[string]map[string]string `json:"stats"`
}

// Self returns the configuration and status of the agent the client talks
// to.
func (a *Agent) Self(ctx context.Context) (*AgentSelf, error) {
	var out AgentSelf
	if _, err := a.c.query(ctx, "/v1/agent/self", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
