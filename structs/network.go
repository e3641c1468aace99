package structs

import "slices"

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
	Mode          string `json:",omitempty"`
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
