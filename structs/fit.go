package structs

import (
	"fmt"
)

// AllocsFit reports whether allocs (the non-terminal allocations meant to
// be on node together) fit its capacity: CPU, memory, and device instances
// that exist and are held at most once. Health is not checked here, since
// an allocation may keep a GPU that failed after it was placed; new
// placements are checked with Node.DeviceProblem. dimension names what
// ran out when they do not fit, in words the CLI can print.
//
// The scheduler and the plan applier both use it, so the applier's
// re-check and the scheduler's choice can never disagree.
func AllocsFit(node *Node, allocs []*Allocation) (fit bool, dimension string) {
	res := node.NodeResources
	if res == nil {
		return false, "node has no resources"
	}
	var cpu, mem int64
	instances := map[string]*NodeDevice{}
	for _, g := range res.Devices {
		for _, inst := range g.Instances {
			instances[inst.ID] = inst
		}
	}
	held := map[string]string{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		c, m := a.Comparable()
		cpu += c
		mem += m
		for _, id := range a.DeviceIDs() {
			if _, ok := instances[id]; !ok {
				return false, fmt.Sprintf("devices: instance %s not on node", id)
			}
			if other, dup := held[id]; dup && other != a.ID {
				return false, fmt.Sprintf("devices: instance %s already held", id)
			}
			held[id] = a.ID
		}
	}
	if cpu > res.Cpu.CpuShares {
		return false, "cpu"
	}
	if mem > res.Memory.MemoryMB {
		return false, "memory"
	}
	return true, ""
}

// DeviceProblem returns why alloc cannot newly take its device instances on
// the node (an instance is missing or unhealthy), or "".
func (n *Node) DeviceProblem(alloc *Allocation) string {
	instances := map[string]*NodeDevice{}
	if n.NodeResources != nil {
		for _, g := range n.NodeResources.Devices {
			for _, inst := range g.Instances {
				instances[inst.ID] = inst
			}
		}
	}
	for _, id := range alloc.DeviceIDs() {
		inst, ok := instances[id]
		switch {
		case !ok:
			return fmt.Sprintf("devices: instance %s not on node", id)
		case !inst.Healthy:
			return fmt.Sprintf("devices: instance %s unhealthy", id)
		}
	}
	return ""
}
