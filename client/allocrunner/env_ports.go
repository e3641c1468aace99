package allocrunner

import (
	"net"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// Port variables, one set per allocated port label, each set under the
// DROVER_ and NOMAD_ prefixes as Nomad sets them for host networking:
// PORT_<label> and ALLOC_PORT_<label> are the port the task binds (the
// port's "to" when set, else the host port); HOST_PORT_<label> is the
// host port; IP_ and HOST_IP_ the node address the port is held on;
// ADDR_ and HOST_ADDR_ are that address with the host port.
const (
	EnvPortPrefix      = "PORT_"
	EnvAllocPortPrefix = "ALLOC_PORT_"
	EnvHostPortPrefix  = "HOST_PORT_"
	EnvIPPrefix        = "IP_"
	EnvHostIPPrefix    = "HOST_IP_"
	EnvAddrPrefix      = "ADDR_"
	EnvHostAddrPrefix  = "HOST_ADDR_"
)

// portVars returns the port variables of alloc, without prefix.
func portVars(alloc *structs.Allocation) map[string]string {
	if alloc.AllocatedResources == nil || len(alloc.AllocatedResources.Shared.Ports) == 0 {
		return nil
	}
	vars := map[string]string{}
	for _, p := range alloc.AllocatedResources.Shared.Ports {
		host := strconv.Itoa(p.Value)
		bind := host
		if p.To > 0 {
			bind = strconv.Itoa(p.To)
		}
		addr := net.JoinHostPort(p.HostIP, host)
		vars[EnvPortPrefix+p.Label] = bind
		vars[EnvAllocPortPrefix+p.Label] = bind
		vars[EnvHostPortPrefix+p.Label] = host
		vars[EnvIPPrefix+p.Label] = p.HostIP
		vars[EnvHostIPPrefix+p.Label] = p.HostIP
		vars[EnvAddrPrefix+p.Label] = addr
		vars[EnvHostAddrPrefix+p.Label] = addr
	}
	return vars
}

// allocPorts returns the ports alloc holds on its node.
func allocPorts(alloc *structs.Allocation) []structs.AllocatedPortMapping {
	if alloc.AllocatedResources == nil {
		return nil
	}
	return alloc.AllocatedResources.Shared.Ports
}
