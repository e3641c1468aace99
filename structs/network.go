package structs

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Network modes. Drover runs "host" (tasks bind the node's interfaces);
// "bridge" needs a network namespace per allocation.
const (
	NetworkModeHost   = "host"
	NetworkModeBridge = "bridge"
	NetworkModeNone   = "none"
)

// NetworkResource is a network a group (or, in older Nomad jobs, a task)
// asks for: the ports it needs, reserved (static) or dynamic. The shape
// follows Nomad's api.NetworkResource.
type NetworkResource struct {
	Mode string `json:",omitempty"`
	// Device, CIDR and IP describe a node's network (NodeResources.Networks):
	// its interface and the address allocations' ports are bound to.
	Device        string `json:",omitempty"`
	CIDR          string `json:",omitempty"`
	IP            string `json:",omitempty"`
	ReservedPorts []Port `json:",omitempty"`
	DynamicPorts  []Port `json:",omitempty"`
}

// Port is one labelled port of a network. Value is the host port (fixed
// for a reserved port, chosen by the scheduler for a dynamic one); To is
// the port inside the task's network (docker's container port; 0 means
// the same as Value, -1 means the same as Value in bridge mode).
type Port struct {
	Label       string
	Value       int    `json:",omitempty"`
	To          int    `json:",omitempty"`
	HostNetwork string `json:",omitempty"`
}

// AllocatedPortMapping is one port an allocation holds on its node.
type AllocatedPortMapping struct {
	Label  string
	Value  int
	To     int
	HostIP string
}

// AllocatedSharedResources is what an allocation's tasks hold together:
// its ports (Nomad's AllocatedResources.Shared).
type AllocatedSharedResources struct {
	Networks []*NetworkResource     `json:",omitempty"`
	Ports    []AllocatedPortMapping `json:",omitempty"`
	// DiskMB is the group's ephemeral disk (structs/ephemeral_disk.go).
	DiskMB int64 `json:",omitempty"`
}

// Copy returns a deep copy.
func (n *NetworkResource) Copy() *NetworkResource {
	if n == nil {
		return nil
	}
	c := *n
	c.ReservedPorts = slices.Clone(n.ReservedPorts)
	c.DynamicPorts = slices.Clone(n.DynamicPorts)
	return &c
}

func copyNetworks(in []*NetworkResource) []*NetworkResource {
	if in == nil {
		return nil
	}
	out := make([]*NetworkResource, len(in))
	for i, n := range in {
		out[i] = n.Copy()
	}
	return out
}

// Copy returns a deep copy.
func (s AllocatedSharedResources) Copy() AllocatedSharedResources {
	return AllocatedSharedResources{Networks: copyNetworks(s.Networks), Ports: slices.Clone(s.Ports), DiskMB: s.DiskMB}
}

// Port returns the allocated port with label, if any.
func (s AllocatedSharedResources) Port(label string) (AllocatedPortMapping, bool) {
	for _, p := range s.Ports {
		if p.Label == label {
			return p, true
		}
	}
	return AllocatedPortMapping{}, false
}

// Port bounds. A group asks for at most MaxPortsPerGroup ports (its own
// network's and its tasks' together); dynamic ports come from the node's
// range, by default Nomad's 20000-32000.
const (
	MaxPort               = 65535
	MaxPortsPerGroup      = 64
	DefaultMinDynamicPort = 20000
	DefaultMaxDynamicPort = 32000
	// DefaultHostNetwork is the only host network Drover has: the node's
	// address.
	DefaultHostNetwork = "default"
	// NodeAttrIP is the node attribute holding the address ports bind to.
	NodeAttrIP = "unique.network.ip-address"
)

// NodeReservedResources is what a node keeps from allocations (Nomad's
// Node.ReservedResources).
type NodeReservedResources struct {
	Networks NodeReservedNetworkResources
}

// NodeReservedNetworkResources are the host ports no allocation may take,
// as written in the agent's client.reserved.reserved_ports ("22,80,8500-8600").
type NodeReservedNetworkResources struct {
	ReservedHostPorts string `json:",omitempty"`
}

// Copy returns a deep copy.
func (r *NodeReservedResources) Copy() *NodeReservedResources {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// ParsePortRanges parses a port list such as "22,80,8500-8600" into its
// ports, sorted and without repeats. Every port is in 1..65535.
func ParsePortRanges(spec string) ([]int, error) {
	seen := map[int]bool{}
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := parsePort(lo)
		if err != nil {
			return nil, err
		}
		last := first
		if isRange {
			if last, err = parsePort(hi); err != nil {
				return nil, err
			}
			if last < first {
				return nil, fmt.Errorf("port range %q: end before start", part)
			}
		}
		for p := first; p <= last; p++ {
			seen[p] = true
		}
	}
	out := make([]int, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > MaxPort {
		return 0, fmt.Errorf("port %q: want a number from 1 to %d", s, MaxPort)
	}
	return p, nil
}

// GroupNetworks returns the networks an allocation of tg holds: the
// group's, then its tasks' (Nomad's older resources.network).
func (tg *TaskGroup) GroupNetworks() []*NetworkResource {
	out := append([]*NetworkResource(nil), tg.Networks...)
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			out = append(out, t.Resources.Networks...)
		}
	}
	return out
}

// AskedPorts returns the group's reserved (static) and dynamic ports.
func (tg *TaskGroup) AskedPorts() (reserved, dynamic []Port) {
	for _, n := range tg.GroupNetworks() {
		if n == nil {
			continue
		}
		reserved = append(reserved, n.ReservedPorts...)
		dynamic = append(dynamic, n.DynamicPorts...)
	}
	return reserved, dynamic
}

// validateNetworks checks the group's networks: host mode only, at most
// one network per group (and per task), labels unique across the group
// and made of letters, digits and underscores, ports in range, and no
// more than MaxPortsPerGroup of them.
func (tg *TaskGroup) validateNetworks() error {
	var errs []error
	if len(tg.Networks) > 1 {
		errs = append(errs, fmt.Errorf("network: a group has at most one network block, not %d", len(tg.Networks)))
	}
	for _, t := range tg.Tasks {
		if t.Resources != nil && len(t.Resources.Networks) > 1 {
			errs = append(errs, fmt.Errorf("task %q: network: a task has at most one network block, not %d", t.Name, len(t.Resources.Networks)))
		}
	}
	labels := map[string]bool{}
	static := map[int]string{}
	total := 0
	for _, n := range tg.GroupNetworks() {
		if n == nil {
			errs = append(errs, errors.New("network: must not be null"))
			continue
		}
		if err := n.ValidateMode(); err != nil {
			errs = append(errs, err)
		}
		total += len(n.ReservedPorts) + len(n.DynamicPorts)
		for _, p := range n.ReservedPorts {
			errs = append(errs, p.Validate(labels, true)...)
			if other, dup := static[p.Value]; dup && p.Value > 0 {
				errs = append(errs, fmt.Errorf("network: port %q: static port %d is also port %q's", p.Label, p.Value, other))
			}
			static[p.Value] = p.Label
		}
		for _, p := range n.DynamicPorts {
			errs = append(errs, p.Validate(labels, false)...)
		}
	}
	errs = append(errs, tg.validatePortsConfig(labels)...)
	if total > MaxPortsPerGroup {
		errs = append(errs, fmt.Errorf("network: %d ports asked, the limit is %d per group", total, MaxPortsPerGroup))
	}
	return errors.Join(errs...)
}

// ValidateMode accepts host networking, the only mode Drover runs.
func (n *NetworkResource) ValidateMode() error {
	switch {
	case n.Mode == "" || n.Mode == NetworkModeHost:
		return nil
	case n.Mode == NetworkModeBridge:
		return errors.New(`network: mode "bridge" is not supported yet: Drover has no network namespace per allocation; use mode = "host" (tasks bind the node's address, docker maps ports with "ports")`)
	case strings.HasPrefix(n.Mode, "cni/"):
		return fmt.Errorf(`network: mode %q is not supported: Drover has no CNI networking; use mode = "host"`, n.Mode)
	}
	return fmt.Errorf(`network: mode %q is not one of host (bridge and cni/* are not supported yet)`, n.Mode)
}

// Validate checks one port, recording its label in labels.
func (p Port) Validate(labels map[string]bool, static bool) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("network: port %q: "+format, append([]any{p.Label}, args...)...))
	}
	switch {
	case p.Label == "":
		errs = append(errs, errors.New("network: port: missing label"))
	case !validPortLabel(p.Label):
		add("label must be letters, digits and underscores")
	case labels[p.Label]:
		add("label used twice in the group")
	}
	labels[p.Label] = true
	if static && (p.Value < 1 || p.Value > MaxPort) {
		add("static %d is not a port (1 to %d)", p.Value, MaxPort)
	}
	if !static && p.Value != 0 {
		add("a dynamic port has no value (%d); use static", p.Value)
	}
	if p.To < -1 || p.To > MaxPort {
		add("to = %d is not -1 to %d", p.To, MaxPort)
	}
	if p.HostNetwork != "" && p.HostNetwork != DefaultHostNetwork {
		add("host_network %q is not supported yet: Drover has only the %q network", p.HostNetwork, DefaultHostNetwork)
	}
	return errs
}

// validPortLabel reports whether label is letters, digits and
// underscores (Nomad's rule), at most 128 of them.
func validPortLabel(label string) bool {
	if len(label) > 128 {
		return false
	}
	for _, r := range label {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// DynamicPortRange returns the node's dynamic port range, Nomad's default
// when the node reports none or one that is not within 1-65535.
func (n *Node) DynamicPortRange() (lo, hi int) {
	lo, hi = DefaultMinDynamicPort, DefaultMaxDynamicPort
	if r := n.NodeResources; r != nil && r.MinDynamicPort > 0 && r.MaxDynamicPort >= r.MinDynamicPort && r.MaxDynamicPort <= MaxPort {
		lo, hi = r.MinDynamicPort, r.MaxDynamicPort
	}
	return lo, hi
}

// ReservedPorts returns the host ports the node keeps from allocations
// (a malformed list, which the agent refuses at start, reserves none).
func (n *Node) ReservedPorts() []int {
	if n.ReservedResources == nil || n.ReservedResources.Networks.ReservedHostPorts == "" {
		return nil
	}
	ports, _ := ParsePortRanges(n.ReservedResources.Networks.ReservedHostPorts)
	return ports
}

// NetworkIP returns the address the node's allocations' ports are bound
// to: its first network's IP, else the NodeAttrIP attribute.
func (n *Node) NetworkIP() string {
	if r := n.NodeResources; r != nil {
		for _, net := range r.Networks {
			if net != nil && net.IP != "" {
				return net.IP
			}
		}
	}
	return n.Attributes[NodeAttrIP]
}

// AddPorts counts (sign 1) or removes (sign -1) an allocation's ports.
func (u *NodeUsage) AddPorts(ports []AllocatedPortMapping, sign int) {
	if len(ports) == 0 {
		return
	}
	if u.Ports == nil {
		u.Ports = map[int]int{}
	}
	for _, p := range ports {
		if n := u.Ports[p.Value] + sign; n > 0 {
			u.Ports[p.Value] = n
		} else {
			delete(u.Ports, p.Value)
		}
	}
}

// PortFree reports whether no allocation holds port and the node does not
// reserve it (reserved is the node's ReservedPorts, sorted).
func (u *NodeUsage) PortFree(port int, reserved []int) bool {
	if u.Ports[port] > 0 {
		return false
	}
	_, found := slices.BinarySearch(reserved, port)
	return !found
}

// checkPorts returns why the usage's ports do not fit node (a port held
// twice, or one the node reserves), or "". The lowest such port is named.
func (u *NodeUsage) checkPorts(node *Node) string {
	if len(u.Ports) == 0 {
		return ""
	}
	reserved := node.ReservedPorts()
	bad := 0
	for port, n := range u.Ports {
		_, isReserved := slices.BinarySearch(reserved, port)
		if (n > 1 || isReserved) && (bad == 0 || port < bad) {
			bad = port
		}
	}
	if bad == 0 {
		return ""
	}
	return fmt.Sprintf("port %d in use", bad)
}

// validatePortsConfig checks that the labels a docker task's config
// lists in "ports" are ports of the group ("host:container" entries map
// ports by number, and the driver checks them).
func (tg *TaskGroup) validatePortsConfig(labels map[string]bool) []error {
	var errs []error
	for _, t := range tg.Tasks {
		raw, ok := t.Config["ports"]
		if !ok || t.Driver != "docker" {
			continue
		}
		list, ok := raw.([]any)
		if !ok {
			if ss, isStrings := raw.([]string); isStrings {
				for _, s := range ss {
					list = append(list, s)
				}
			} else {
				errs = append(errs, fmt.Errorf("task %q: config ports: want a list of port labels", t.Name))
				continue
			}
		}
		for _, v := range list {
			label, isString := v.(string)
			switch {
			case !isString:
				errs = append(errs, fmt.Errorf("task %q: config ports: %v is not a port label", t.Name, v))
			case strings.Contains(label, ":") || strings.Contains(label, "${"):
			case !labels[label]:
				errs = append(errs, fmt.Errorf("task %q: config ports: %q is not a port of the group's network", t.Name, label))
			}
		}
	}
	return errs
}
