package client

import "slices"

// Servers returns the servers' RPC addresses the client knows, in the
// order it tries them (Nomad's /v1/agent/servers).
func (c *Client) Servers() []string {
	c.rpc.mu.Lock()
	defer c.rpc.mu.Unlock()
	return slices.Clone(c.rpc.servers)
}
