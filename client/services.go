package client

import (
	"context"
	"net"

	"github.com/droverhq/drover/client/services"
	"github.com/droverhq/drover/structs"
)

// newServices makes the manager of the allocations' services and checks
// (package client/services); NewClient runs it.
func (c *Client) newServices() *services.Manager {
	return services.New(services.Config{
		Server:        serviceServer{c},
		Lookup:        c.serviceRunner,
		NodeID:        c.node.ID,
		Address:       c.serviceAddress(),
		Logger:        c.logger,
		RetryInterval: c.cfg.RetryInterval,
	})
}

// Services returns the manager of the allocations' services: its
// AllocChecksHealthy tells whether an allocation's checks pass.
func (c *Client) Services() *services.Manager { return c.services }

// serviceRunner returns the runner of an allocation the client runs.
func (c *Client) serviceRunner(allocID string) (services.Runner, bool) {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	r := c.runners[allocID]
	if r == nil {
		return nil, false
	}
	return r.ar, true
}

// serviceAddress is the address services register with: the node's IP
// attribute, else the host of the agent's HTTP address, else loopback.
func (c *Client) serviceAddress() string {
	if ip := c.node.Attributes["unique.network.ip-address"]; ip != "" {
		return ip
	}
	if host, _, err := net.SplitHostPort(c.cfg.HTTPAddr); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
			return host
		}
	}
	return "127.0.0.1"
}

// serviceServer sends registrations to the servers as this node.
type serviceServer struct{ c *Client }

func (s serviceServer) Register(ctx context.Context, regs []*structs.ServiceRegistration) error {
	c := s.c
	req := &structs.ServiceRegistrationUpsertRequest{NodeID: c.NodeID(), SecretID: c.Node().SecretID, Services: regs,
		WriteRequest: structs.WriteRequest{Region: c.cfg.Region}}
	return c.rpc.call(ctx, structs.RPCServiceRegistrationUpsert, req, &structs.GenericResponse{})
}

func (s serviceServer) Deregister(ctx context.Context, allocIDs []string) error {
	c := s.c
	req := &structs.ServiceRegistrationDeleteByAllocRequest{NodeID: c.NodeID(), SecretID: c.Node().SecretID, AllocIDs: allocIDs,
		WriteRequest: structs.WriteRequest{Region: c.cfg.Region}}
	return c.rpc.call(ctx, structs.RPCServiceRegistrationDeregister, req, &structs.GenericResponse{})
}

// opAllocChecks answers the latest result of each check of an
// allocation, keyed by check ID (Nomad's /v1/client/allocation/<id>/checks).
func (c *Client) opAllocChecks(_ context.Context, args []byte) (any, error) {
	var req structs.ClientAllocRequest
	if err := decodeArgs(args, &req); err != nil {
		return nil, err
	}
	if _, err := c.runnerOf(req.AllocID); err != nil {
		return nil, err
	}
	out := map[string]services.CheckResult{}
	for _, r := range c.services.AllocChecks(req.AllocID) {
		out[r.ID] = r
	}
	return out, nil
}
