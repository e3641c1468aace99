package structs

import (
	"maps"
	"slices"
	"strings"
)

// Node statuses.
const (
	NodeStatusInit  = "initializing"
	NodeStatusReady = "ready"
	NodeStatusDown  = "down"
)

// Node scheduling eligibility.
const (
	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// Device attribute keys every GPU group carries (see design §4). Values
// with units are strings such as "80 GiB"; the scheduler compares them as
// quantities.
const (
	DeviceAttrMemory            = "memory"
	DeviceAttrComputeCapability = "compute_capability"
	DeviceAttrArchitecture      = "architecture"
	DeviceAttrDriverVersion     = "driver_version"
	DeviceAttrCUDAVersion       = "cuda_version"
	DeviceAttrPower             = "power"
	DeviceAttrMIGProfile        = "mig_profile"
	DeviceAttrSimulated         = "simulated"
	// Per-instance attributes (NodeDevice.Attributes).
	DeviceAttrPCIBusID = "pci_bus_id"
	DeviceAttrNUMANode = "numa_node"
)

// Link types between two GPU instances, best first.
const (
	LinkNVLink     = "nvlink"
	LinkPCIeSwitch = "pcie_switch"
	LinkHostBridge = "host_bridge"
	LinkSystem     = "system"
)

// Node is a client machine as the servers know it.
type Node struct {
	ID         string
	SecretID   string `json:",omitempty"`
	Datacenter string
	Name       string
	HTTPAddr   string
	NodeClass  string
	// Attributes are fingerprinted facts: "kernel.name", "cpu.numcores",
	// "driver.raw_exec", "unique.hostname", ...
	Attributes    map[string]string
	Meta          map[string]string
	NodeResources *NodeResources
	// ReservedResources is what the node keeps from allocations: host
	// ports (structs/network.go).
	ReservedResources *NodeReservedResources `json:",omitempty"`
	Drivers           map[string]*DriverInfo
	// HostVolumes are the host volumes the client offers, by name
	// (structs/volumes.go).
	HostVolumes map[string]*ClientHostVolumeConfig `json:",omitempty"`

	Status                string
	StatusDescription     string
	StatusUpdatedAt       int64
	SchedulingEligibility string
	Drain                 bool

	CreateIndex uint64
	ModifyIndex uint64
}

// DriverInfo is a task driver's fingerprint on a node.
type DriverInfo struct {
	Detected          bool
	Healthy           bool
	HealthDescription string
}

// NodeResources is a node's schedulable capacity.
type NodeResources struct {
	Cpu     NodeCpuResources
	Memory  NodeMemoryResources
	Devices []*NodeDeviceResource
	// Networks are the node's addresses; MinDynamicPort and
	// MaxDynamicPort bound the ports given to dynamic port asks
	// (structs/network.go).
	Networks       []*NetworkResource `json:",omitempty"`
	MinDynamicPort int                `json:",omitempty"`
	MaxDynamicPort int                `json:",omitempty"`
	// Disk is the disk allocations' ephemeral disks may take
	// (structs/ephemeral_disk.go); 0: not reported, not counted.
	Disk NodeDiskResources
}

// NodeCpuResources is CPU capacity in MHz across all cores.
type NodeCpuResources struct {
	CpuShares     int64
	TotalCpuCores uint16
}

// NodeMemoryResources is memory capacity.
type NodeMemoryResources struct {
	MemoryMB int64
}

// NodeDeviceResource is a group of identical devices on a node (one GPU
// model), with one instance per device keyed by its ID (the GPU UUID).
type NodeDeviceResource struct {
	Vendor     string // "nvidia"
	Type       string // "gpu"
	Name       string // model, e.g. "NVIDIA H100 80GB HBM3"
	Instances  []*NodeDevice
	Attributes map[string]string
}

// NodeDevice is one device instance.
type NodeDevice struct {
	ID                string // GPU UUID
	Healthy           bool
	HealthDescription string
	Locality          *NodeDeviceLocality
	// Attributes that differ per instance (numa_node, mig_profile, ...).
	Attributes map[string]string
	// Links maps another instance's ID to how this one reaches it
	// (LinkNVLink, LinkPCIeSwitch, LinkHostBridge, LinkSystem).
	Links map[string]string `json:",omitempty"`
}

// NodeDeviceLocality is where a device sits on the host.
type NodeDeviceLocality struct {
	PciBusID string
}

// ID returns "vendor/type/name".
func (d *NodeDeviceResource) ID() string { return d.Vendor + "/" + d.Type + "/" + d.Name }

// Matches reports whether a request name's parts select this group. The
// model matches the group's name case-insensitively, with or without the
// vendor's leading word ("H100 80GB HBM3" selects "NVIDIA H100 80GB HBM3").
func (d *NodeDeviceResource) Matches(vendor, typ, model string) bool {
	if !strings.EqualFold(d.Type, typ) {
		return false
	}
	if vendor != "" && !strings.EqualFold(d.Vendor, vendor) {
		return false
	}
	if model == "" {
		return true
	}
	name := d.Name
	if strings.EqualFold(name, model) {
		return true
	}
	if i := strings.IndexByte(name, ' '); i > 0 && strings.EqualFold(name[:i], d.Vendor) {
		return strings.EqualFold(name[i+1:], model)
	}
	return false
}

// Ready reports whether the node can take new allocations.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && !n.Drain && n.SchedulingEligibility != NodeSchedulingIneligible
}

// TerminalStatus reports whether the node is down.
func (n *Node) TerminalStatus() bool { return n.Status == NodeStatusDown }

// Copy returns a deep copy of the node.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Attributes = maps.Clone(n.Attributes)
	c.Meta = maps.Clone(n.Meta)
	c.NodeResources = n.NodeResources.Copy()
	c.ReservedResources = n.ReservedResources.Copy()
	c.HostVolumes = copyHostVolumes(n.HostVolumes)
	if n.Drivers != nil {
		c.Drivers = make(map[string]*DriverInfo, len(n.Drivers))
		for k, v := range n.Drivers {
			if v == nil {
				c.Drivers[k] = nil
				continue
			}
			vc := *v
			c.Drivers[k] = &vc
		}
	}
	return &c
}

// Copy returns a deep copy of the resources.
func (r *NodeResources) Copy() *NodeResources {
	if r == nil {
		return nil
	}
	c := *r
	c.Devices = make([]*NodeDeviceResource, len(r.Devices))
	for i, d := range r.Devices {
		c.Devices[i] = d.Copy()
	}
	c.Networks = copyNetworks(r.Networks)
	return &c
}

// Copy returns a deep copy of the device group.
func (d *NodeDeviceResource) Copy() *NodeDeviceResource {
	if d == nil {
		return nil
	}
	c := *d
	c.Attributes = maps.Clone(d.Attributes)
	c.Instances = make([]*NodeDevice, len(d.Instances))
	for i, inst := range d.Instances {
		if inst == nil {
			continue
		}
		ic := *inst
		ic.Attributes = maps.Clone(inst.Attributes)
		ic.Links = maps.Clone(inst.Links)
		if inst.Locality != nil {
			l := *inst.Locality
			ic.Locality = &l
		}
		c.Instances[i] = &ic
	}
	return &c
}

// GPUCount returns how many device instances of type "gpu" the node has,
// and how many of those are healthy.
func (n *Node) GPUCount() (total, healthy int) {
	if n.NodeResources == nil {
		return 0, 0
	}
	for _, d := range n.NodeResources.Devices {
		if d.Type != "gpu" {
			continue
		}
		for _, inst := range d.Instances {
			total++
			if inst.Healthy {
				healthy++
			}
		}
	}
	return total, healthy
}

// NodeListStub is the summary returned by node list endpoints.
type NodeListStub struct {
	Address               string
	ID                    string
	Datacenter            string
	Name                  string
	NodeClass             string
	Version               string
	Drain                 bool
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	Drivers               map[string]*DriverInfo
	// Drover: GPU counts so the list can show them without a read per node.
	GPUs        int
	HealthyGPUs int
	CreateIndex uint64
	ModifyIndex uint64
}

// Stub returns the node's list stub.
func (n *Node) Stub() *NodeListStub {
	total, healthy := n.GPUCount()
	addr := n.HTTPAddr
	if i := strings.LastIndexByte(addr, ':'); i > 0 {
		addr = addr[:i]
	}
	return &NodeListStub{
		Address: addr, ID: n.ID, Datacenter: n.Datacenter, Name: n.Name,
		NodeClass: n.NodeClass, Version: n.Attributes["drover.version"],
		Drain: n.Drain, SchedulingEligibility: n.SchedulingEligibility,
		Status: n.Status, StatusDescription: n.StatusDescription,
		Drivers: n.Drivers, GPUs: total, HealthyGPUs: healthy,
		CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
}

// SortedDeviceIDs returns the instance IDs of a group in order.
func (d *NodeDeviceResource) SortedDeviceIDs() []string {
	ids := make([]string, len(d.Instances))
	for i, inst := range d.Instances {
		ids[i] = inst.ID
	}
	slices.Sort(ids)
	return ids
}
