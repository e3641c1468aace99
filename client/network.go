package client

import (
	"fmt"
	"net"
	"strings"

	"github.com/droverhq/drover/structs"
)

// NetworkConfig is what the node reports of its networking: the address
// allocations' ports are bound to and the ports the scheduler may give
// them.
type NetworkConfig struct {
	// Interface names the interface whose first address the node
	// reports; "" uses DefaultIP.
	Interface string
	// DefaultIP is the address without an Interface ("" : the first
	// address of an interface that is up, else 127.0.0.1).
	DefaultIP string
	// MinDynamicPort and MaxDynamicPort bound dynamic ports (0: Nomad's
	// 20000-32000).
	MinDynamicPort, MaxDynamicPort int
	// ReservedPorts are ports no allocation may take ("22,8500-8600").
	ReservedPorts string
}

// fingerprintNetwork records the node's address (NodeResources.Networks
// and the unique.network.ip-address attribute), its dynamic port range
// and its reserved ports on node.
func (c *Client) fingerprintNetwork(node *structs.Node) error {
	cfg := c.cfg.Network
	device, ip, err := networkAddress(cfg)
	if err != nil {
		return err
	}
	bits := 32
	if strings.Contains(ip, ":") {
		bits = 128
	}
	node.NodeResources.Networks = []*structs.NetworkResource{{
		Mode: structs.NetworkModeHost, Device: device, IP: ip, CIDR: fmt.Sprintf("%s/%d", ip, bits),
	}}
	node.Attributes[structs.NodeAttrIP] = ip
	node.NodeResources.MinDynamicPort, node.NodeResources.MaxDynamicPort = cfg.MinDynamicPort, cfg.MaxDynamicPort
	if cfg.MinDynamicPort == 0 || cfg.MaxDynamicPort == 0 {
		node.NodeResources.MinDynamicPort, node.NodeResources.MaxDynamicPort = structs.DefaultMinDynamicPort, structs.DefaultMaxDynamicPort
	}
	if cfg.ReservedPorts != "" {
		node.ReservedResources = &structs.NodeReservedResources{Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: cfg.ReservedPorts}}
	}
	return nil
}

// networkAddress picks the node's interface and address.
func networkAddress(cfg NetworkConfig) (device, ip string, err error) {
	if cfg.Interface != "" {
		iface, err := net.InterfaceByName(cfg.Interface)
		if err != nil {
			return "", "", fmt.Errorf("network_interface %q: %w", cfg.Interface, err)
		}
		if ip := firstAddr(iface); ip != "" {
			return iface.Name, ip, nil
		}
		return "", "", fmt.Errorf("network_interface %q has no address", cfg.Interface)
	}
	if cfg.DefaultIP != "" {
		return "", cfg.DefaultIP, nil
	}
	ifaces, err := net.Interfaces()
	if err == nil {
		for _, iface := range ifaces {
			if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
				continue
			}
			if ip := firstAddr(&iface); ip != "" {
				return iface.Name, ip, nil
			}
		}
	}
	return "lo", "127.0.0.1", nil
}

// firstAddr returns the interface's first IPv4 address, else its first
// global IPv6 one, else "".
func firstAddr(iface *net.Interface) string {
	addrs, err := iface.Addrs()
	if err != nil {
		return ""
	}
	var v6 string
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if v4 := ipnet.IP.To4(); v4 != nil {
			return v4.String()
		}
		if v6 == "" && ipnet.IP.IsGlobalUnicast() {
			v6 = ipnet.IP.String()
		}
	}
	return v6
}
