package agent

import (
	"fmt"
	"net"

	"github.com/droverhq/drover/client"
	"github.com/droverhq/drover/structs"
)

// ReservedConfig is the client's reserved block: what allocations may not
// take. Drover reads Nomad's reserved_ports ("22,80,8500-8600").
type ReservedConfig struct {
	ReservedPorts string `hcl:"reserved_ports,optional"`
}

// mergeNetwork takes o's networking settings where it sets them.
func (c *ClientConfig) mergeNetwork(o *ClientConfig) {
	if o.NetworkInterface != "" {
		c.NetworkInterface = o.NetworkInterface
	}
	if o.MinDynamicPort != 0 {
		c.MinDynamicPort = o.MinDynamicPort
	}
	if o.MaxDynamicPort != 0 {
		c.MaxDynamicPort = o.MaxDynamicPort
	}
	if o.Reserved != nil {
		c.Reserved = o.Reserved
	}
}

// validateNetwork checks the merged client networking: a dynamic range
// within 1..65535 (the defaults fill what is unset), low before high, a
// reserved_ports list that parses, and an interface that exists.
func (c *ClientConfig) validateNetwork() []error {
	var errs []error
	lo, hi := c.dynamicRange()
	for name, p := range map[string]int{"min_dynamic_port": c.MinDynamicPort, "max_dynamic_port": c.MaxDynamicPort} {
		if p < 0 || p > structs.MaxPort {
			errs = append(errs, fmt.Errorf("agent config: client.%s %d is not a port (1 to %d)", name, p, structs.MaxPort))
		}
	}
	if len(errs) == 0 && lo > hi {
		errs = append(errs, fmt.Errorf("agent config: client.min_dynamic_port %d is above max_dynamic_port %d", lo, hi))
	}
	if c.Reserved != nil && c.Reserved.ReservedPorts != "" {
		if _, err := structs.ParsePortRanges(c.Reserved.ReservedPorts); err != nil {
			errs = append(errs, fmt.Errorf("agent config: client.reserved.reserved_ports: %w", err))
		}
	}
	if c.NetworkInterface != "" {
		if _, err := net.InterfaceByName(c.NetworkInterface); err != nil {
			errs = append(errs, fmt.Errorf("agent config: client.network_interface %q: %w", c.NetworkInterface, err))
		}
	}
	return errs
}

// dynamicRange is the configured dynamic port range, Nomad's defaults
// where unset.
func (c *ClientConfig) dynamicRange() (lo, hi int) {
	lo, hi = structs.DefaultMinDynamicPort, structs.DefaultMaxDynamicPort
	if c.MinDynamicPort != 0 {
		lo = c.MinDynamicPort
	}
	if c.MaxDynamicPort != 0 {
		hi = c.MaxDynamicPort
	}
	return lo, hi
}

// network is what the client reports of its networking. Without an
// interface the node's address is the agent's bind address, or, when
// that is every address, the first one of an interface that is up.
func (a *Agent) network() client.NetworkConfig {
	cl := a.config.Client
	lo, hi := cl.dynamicRange()
	n := client.NetworkConfig{Interface: cl.NetworkInterface, MinDynamicPort: lo, MaxDynamicPort: hi}
	if cl.Reserved != nil {
		n.ReservedPorts = cl.Reserved.ReservedPorts
	}
	if ip := net.ParseIP(a.config.BindAddr); ip != nil && !ip.IsUnspecified() {
		n.DefaultIP = ip.String()
	}
	return n
}
