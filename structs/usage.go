package structs

import (
	"fmt"
	"maps"
)

// WholeGPU is one GPU instance in the percent units of compute slices.
const WholeGPU = 100

// DeviceUse is what the allocations on a node hold of one device
// instance: the whole of it, or slices of its compute and memory.
type DeviceUse struct {
	Whole    int    // allocations holding the whole instance
	Slices   int    // allocations holding a slice
	Compute  int    // percent held by slices
	MemoryMB uint64 // held by slices
}

// Free reports whether nothing holds any of the instance.
func (u DeviceUse) Free() bool { return u.Whole == 0 && u.Slices == 0 }

// FreeCompute is the percent of the instance's compute still free.
func (u DeviceUse) FreeCompute() int {
	if u.Whole > 0 {
		return 0
	}
	return max(WholeGPU-u.Compute, 0)
}

// NodeUsage sums what the non-terminal allocations on one node hold. The
// state store keeps one per node, updated in the same transaction as the
// allocations, so a scheduler reads a node's use in one lookup instead of
// summing its allocations. AllocsFit builds one from a list to check a
// plan, so both apply the same rules (Check).
//
// Node is the node the usage was last refreshed against (nil for a node
// the store does not know, such as one deregistered while allocations
// remained). FreeGPUs and MaxFreeCompute are derived from it, for the
// store's candidate indexes. A NodeUsage in the store is immutable: copy,
// then change.
type NodeUsage struct {
	NodeID   string
	Node     *Node `json:"-" codec:"-"`
	CPU      int64
	MemoryMB int64
	DiskMB   int64 // ephemeral disks (structs/ephemeral_disk.go)
	Allocs   int
	Devices  map[string]DeviceUse // by instance ID; absent when unused
	// Ports counts the allocations holding each host port (network.go).
	Ports map[int]int `json:",omitempty"`

	// FreeGPUs is the number of healthy GPU instances nothing holds.
	FreeGPUs int
	// MaxFreeCompute is the most free compute (percent) of any healthy
	// GPU instance: WholeGPU when one is free, 0 when all are busy.
	MaxFreeCompute int

	// HeldFor is set only on a scheduler's own copy whose free GPUs a
	// waiting gang's reservation holds (Hold): the job it holds them for.
	HeldFor string `json:"-" codec:"-"`
}

// Hold returns a copy of u in which up to n free healthy GPU instances
// (all, when n < 0), in the node's order, are held for the reservation
// of job (Reservation), so a placement sees them taken and can say why.
func (u *NodeUsage) Hold(job string, n int) *NodeUsage {
	c := u.Copy()
	c.HeldFor = job
	if c.Node == nil || c.Node.NodeResources == nil {
		return c
	}
	for _, g := range c.Node.NodeResources.Devices {
		if g.Type != "gpu" {
			continue
		}
		for _, inst := range g.Instances {
			if use := c.Devices[inst.ID]; inst.Healthy && use.Free() && n != 0 {
				if c.Devices == nil {
					c.Devices = map[string]DeviceUse{}
				}
				use.Whole++
				c.Devices[inst.ID] = use
				n--
			}
		}
	}
	c.Refresh(c.Node)
	return c
}

// NewNodeUsage returns the usage of a node nothing runs on.
func NewNodeUsage(node *Node) *NodeUsage {
	u := &NodeUsage{NodeID: node.ID, Node: node}
	u.Refresh(node)
	return u
}

// Copy returns a copy that may be changed without touching u.
func (u *NodeUsage) Copy() *NodeUsage {
	if u == nil {
		return nil
	}
	c := *u
	c.Devices = maps.Clone(u.Devices)
	c.Ports = maps.Clone(u.Ports)
	return &c
}

// Add counts alloc (sign 1) or removes it (sign -1). Terminal allocations
// are the caller's business: Add counts what it is given.
func (u *NodeUsage) Add(alloc *Allocation, sign int) {
	if alloc.AllocatedResources == nil {
		return
	}
	cpu, mem := alloc.Comparable()
	u.CPU += int64(sign) * cpu
	u.MemoryMB += int64(sign) * mem
	u.DiskMB += int64(sign) * alloc.AllocatedResources.Shared.DiskMB
	u.Allocs += sign
	for _, t := range alloc.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			u.AddDevices(d, sign)
		}
	}
	u.AddPorts(alloc.AllocatedResources.Shared.Ports, sign)
}

// AddDevices counts (sign 1) or removes (sign -1) one device holding.
func (u *NodeUsage) AddDevices(d *AllocatedDeviceResource, sign int) {
	if u.Devices == nil {
		u.Devices = map[string]DeviceUse{}
	}
	for _, id := range d.DeviceIDs {
		use := u.Devices[id]
		if d.Slice() {
			use.Slices += sign
			use.Compute += sign * d.Compute
			if sign > 0 {
				use.MemoryMB += d.MemoryMB
			} else {
				use.MemoryMB -= min(use.MemoryMB, d.MemoryMB)
			}
		} else {
			use.Whole += sign
		}
		if use == (DeviceUse{}) {
			delete(u.Devices, id)
		} else {
			u.Devices[id] = use
		}
	}
}

// Refresh records node as the node the usage applies to and recomputes
// the fields derived from it.
func (u *NodeUsage) Refresh(node *Node) {
	u.Node = node
	u.FreeGPUs, u.MaxFreeCompute = 0, 0
	if node == nil || node.NodeResources == nil {
		return
	}
	for _, g := range node.NodeResources.Devices {
		if g.Type != "gpu" {
			continue
		}
		for _, inst := range g.Instances {
			if !inst.Healthy {
				continue
			}
			use := u.Devices[inst.ID]
			if use.Free() {
				u.FreeGPUs++
			}
			u.MaxFreeCompute = max(u.MaxFreeCompute, use.FreeCompute())
		}
	}
}

// Check reports whether the usage fits node's capacity: CPU, memory, and
// every held device instance exists and is held either whole by one
// allocation or, where its sharing mode takes slices (SharesSlices), in
// slices that sum to at most one instance (compute, and memory where the
// group reports it). dimension names what ran out.
func (u *NodeUsage) Check(node *Node) (fit bool, dimension string) {
	res := node.NodeResources
	if res == nil {
		return false, "node has no resources"
	}
	for id, use := range u.Devices {
		g, inst := node.Instance(id)
		switch {
		case inst == nil:
			return false, fmt.Sprintf("devices: instance %s not on node", id)
		case use.Whole > 1 || (use.Whole == 1 && use.Slices > 0):
			return false, fmt.Sprintf("devices: instance %s already held", id)
		case use.Slices > 0 && !SharesSlices(g.SharingMode(inst)):
			return false, fmt.Sprintf("devices: instance %s takes no slices (mode %s)", id, g.SharingMode(inst))
		case use.Compute > WholeGPU:
			return false, fmt.Sprintf("devices: instance %s compute over 100%%", id)
		case use.MemoryMB > 0 && g.MemoryMB() > 0 && use.MemoryMB > g.MemoryMB():
			return false, fmt.Sprintf("devices: instance %s GPU memory exhausted", id)
		}
	}
	if reason := u.checkPorts(node); reason != "" {
		return false, reason
	}
	if u.CPU > res.Cpu.CpuShares {
		return false, "cpu"
	}
	if u.MemoryMB > res.Memory.MemoryMB {
		return false, "memory"
	}
	if !res.Disk.Fits(u.DiskMB) {
		return false, "disk"
	}
	return true, ""
}

// Instance returns the device instance with id and its group, or nils.
func (n *Node) Instance(id string) (*NodeDeviceResource, *NodeDevice) {
	if n.NodeResources == nil {
		return nil, nil
	}
	for _, g := range n.NodeResources.Devices {
		for _, inst := range g.Instances {
			if inst.ID == id {
				return g, inst
			}
		}
	}
	return nil, nil
}

// MemoryMB is the memory of one instance of the group, from its memory
// attribute ("80 GiB"); 0 when it does not say, and then memory slices
// are not bounded.
func (d *NodeDeviceResource) MemoryMB() uint64 {
	v, ok := d.Attributes[DeviceAttrMemory]
	if !ok {
		return 0
	}
	b, err := ParseBytes(v)
	if err != nil {
		return 0
	}
	return b >> 20
}

// GPUShape is the allocation's GPU ask as held: the number of GPU
// instances, and the percent of each it holds (WholeGPU for whole ones,
// else the slice's compute; a memory-only slice counts as 1).
func (a *Allocation) GPUShape() (gpus, compute int) {
	if a.AllocatedResources == nil {
		return 0, 0
	}
	compute = WholeGPU
	for _, t := range a.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			if d.Type != "gpu" {
				continue
			}
			gpus += len(d.DeviceIDs)
			if d.Slice() {
				compute = max(d.Compute, 1)
			}
		}
	}
	return gpus, compute
}
