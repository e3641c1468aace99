package structs

import (
	"fmt"
)

// AllocsFit reports whether allocs (the non-terminal allocations meant to
// be on node together) fit its capacity: CPU, memory, and device instances
// that exist and are held whole by one allocation or in slices that sum
// to at most one instance (NodeUsage.Check). An allocation listed twice
// counts once. Health is not checked here, since
// an allocation may keep a GPU that failed after it was placed; new
// placements are checked with Node.DeviceProblem. dimension names what
// ran out when they do not fit, in words the CLI can print.
//
// The scheduler and the plan applier both use it, so the applier's
// re-check and the scheduler's choice can never disagree.
func AllocsFit(node *Node, allocs []*Allocation) (fit bool, dimension string) {
	if node.NodeResources == nil {
		return false, "node has no resources"
	}
	u := &NodeUsage{NodeID: node.ID}
	seen := make(map[string]bool, len(allocs))
	for _, a := range allocs {
		if a.TerminalStatus() || seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		u.Add(a, 1)
	}
	return u.Check(node)
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
