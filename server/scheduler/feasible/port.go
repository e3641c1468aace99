package feasible

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// PortFit is the port stage. The group's static ports must be free on the
// node: no allocation there holds them (the plan's included) and the
// node does not reserve them. Its dynamic ports are chosen from the
// node's dynamic range among the free ones, scanning up from a start
// that the seed (the eval ID), the node and how many allocations it holds
// decide: one evaluation is repeatable, and allocations placed together
// on one node get different ports. The plan applier re-checks the ports
// (structs.NodeUsage.Check), so two plans never hold one port.
type PortFit struct {
	static, dynamic []structs.Port
	seed            string
}

// NewPortFit returns the port stage for tg, or nil when it asks no ports.
func NewPortFit(tg *structs.TaskGroup, seed string) *PortFit {
	static, dynamic := tg.AskedPorts()
	if len(static) == 0 && len(dynamic) == 0 {
		return nil
	}
	return &PortFit{static: static, dynamic: dynamic, seed: seed}
}

// Fit implements Fit; it records the ports chosen on c.
func (f *PortFit) Fit(c *Candidate) (bool, string) {
	nodeReserved := c.Node.ReservedPorts()
	ip := c.Node.NetworkIP()
	ports := make([]structs.AllocatedPortMapping, 0, len(f.static)+len(f.dynamic))
	taken := make(map[int]bool, len(f.static)+len(f.dynamic))
	for _, p := range f.static {
		if !c.Usage.PortFree(p.Value, nodeReserved) {
			return false, fmt.Sprintf("port %d in use", p.Value)
		}
		taken[p.Value] = true
		ports = append(ports, mapping(p, p.Value, ip))
	}
	lo, hi := c.Node.DynamicPortRange()
	span := hi - lo + 1
	start := int((fnv64a(fnv64a(fnvOffset, f.seed), c.Node.ID) + uint64(c.Usage.Allocs)) % uint64(span))
	next := 0
	for _, p := range f.dynamic {
		port := 0
		for ; next < span && port == 0; next++ {
			candidate := lo + (start+next)%span
			if !taken[candidate] && c.Usage.PortFree(candidate, nodeReserved) {
				port = candidate
			}
		}
		if port == 0 {
			return false, fmt.Sprintf("dynamic ports: none free in %d-%d", lo, hi)
		}
		taken[port] = true
		ports = append(ports, mapping(p, port, ip))
	}
	c.ports = ports
	return true, ""
}

// mapping is port p of the group held at host port value on ip. To of
// -1 (Nomad: the same as the host port) is written as the host port.
func mapping(p structs.Port, value int, ip string) structs.AllocatedPortMapping {
	to := p.To
	if to < 0 {
		to = value
	}
	return structs.AllocatedPortMapping{Label: p.Label, Value: value, To: to, HostIP: ip}
}
