package feasible

import (
	"fmt"
	"slices"
	"strings"

	"github.com/droverhq/drover/structs"
)

// instanceRef is one device instance with the group it belongs to and
// its position in the node's link matrix.
type instanceRef struct {
	group *structs.NodeDeviceResource
	inst  *structs.NodeDevice
	pos   int
	memMB uint64 // the instance's memory, 0 when the group does not say
}

// deviceMatcher finds, per node, the instances each device request may
// use by name and constraints (health and use aside). It remembers only
// the last node it matched: the Stack keeps each node's result in its
// NodeCache, next to the filters' verdict.
type deviceMatcher struct {
	asks     []deviceAsk
	checker  *Checker
	lastNode *structs.Node
	last     *nodeDevices
}

// nodeDevices is a node's matching instances per request, sorted by ID,
// and why the node cannot serve some request at all ("" when it can).
// It is shared between evaluations (see NodeCache) and never changed
// once built.
type nodeDevices struct {
	perAsk [][]instanceRef
	reason string
	links  linkMatrix // between the matched instances, by instanceRef.pos
}

func newDeviceMatcher(asks []deviceAsk, checker *Checker) *deviceMatcher {
	return &deviceMatcher{asks: asks, checker: checker}
}

func (m *deviceMatcher) match(n *structs.Node) *nodeDevices {
	if m.lastNode == n {
		return m.last
	}
	nd := &nodeDevices{perAsk: make([][]instanceRef, len(m.asks))}
	var insts []*structs.NodeDevice
	for i, a := range m.asks {
		refs, reason := m.matchAsk(n, a)
		for j := range refs {
			pos := slices.Index(insts, refs[j].inst)
			if pos < 0 {
				pos = len(insts)
				insts = append(insts, refs[j].inst)
			}
			refs[j].pos = pos
		}
		nd.perAsk[i] = refs
		if nd.reason == "" {
			nd.reason = reason
		}
	}
	nd.links = newLinkMatrix(insts)
	m.lastNode, m.last = n, nd
	return nd
}

// matchAsk returns the instances of n that a serves, or why there are
// none: no group of that name ("device nvidia/gpu not available"), or
// the first device constraint that the first instance failed.
func (m *deviceMatcher) matchAsk(n *structs.Node, a deviceAsk) ([]instanceRef, string) {
	var groups []*structs.NodeDeviceResource
	if n.NodeResources != nil {
		groups = n.NodeResources.Devices
	}
	named := false
	failed := ""
	var refs []instanceRef
	for _, g := range groups {
		if !g.Matches(a.vendor, a.typ, a.model) {
			continue
		}
		named = true
		mem := g.MemoryMB()
		for _, inst := range g.Instances {
			if c := m.failedConstraint(a.req.Constraints, g, inst); c != "" {
				if failed == "" {
					failed = c
				}
				continue
			}
			refs = append(refs, instanceRef{group: g, inst: inst, memMB: mem})
		}
	}
	switch {
	case !named:
		return nil, fmt.Sprintf("device %s not available", a.req.Name)
	case len(refs) == 0 && failed != "":
		return nil, failed
	case len(refs) == 0:
		return nil, fmt.Sprintf("device %s has no instances", a.req.Name)
	}
	slices.SortFunc(refs, func(x, y instanceRef) int { return strings.Compare(x.inst.ID, y.inst.ID) })
	return refs, ""
}

func (m *deviceMatcher) failedConstraint(cs []*structs.Constraint, g *structs.NodeDeviceResource, inst *structs.NodeDevice) string {
	if len(cs) == 0 {
		return ""
	}
	resolve := DeviceResolver(g, inst)
	for _, c := range cs {
		if !m.checker.Holds(c.LTarget, c.Operand, c.RTarget, resolve) {
			return c.String()
		}
	}
	return ""
}

// DeviceFit chooses, for every device request of the group, instances
// that match it and are healthy and free: for a whole-instance request,
// instances nothing holds (which ones is TopologyPicker's choice, and a
// request may take instances of several matching groups); for a slice
// (compute and/or memory), the instance with room whose free compute is
// tightest. An instance an earlier request of this allocation took is not
// free. It records the choice on the candidate; when too few are free the
// node is exhausted, with a dimension such as "devices: nvidia/gpu: 1 of
// 4 free, need 2", or "devices: nvidia/gpu: node has 4 matching, need 5"
// when the node could never hold the request.
type DeviceFit struct {
	devices *deviceMatcher
	picker  *TopologyPicker
	free    []instanceRef // scratch
}

// Fit implements Fit.
func (f *DeviceFit) Fit(c *Candidate) (bool, string) {
	if len(f.devices.asks) == 0 {
		return true, ""
	}
	nd := c.devices
	if nd == nil {
		nd = f.devices.match(c.Node)
	}
	c.chosen = slices.Grow(c.chosen[:0], len(f.devices.asks))[:len(f.devices.asks)]
	clear(c.chosen)
	for i, a := range f.devices.asks {
		var chosen []instanceRef
		var why string
		if isSlice(a.req) {
			chosen, why = f.slices(c, a, nd.perAsk[i])
		} else {
			chosen, why = f.whole(c, a, nd, nd.perAsk[i])
		}
		if chosen == nil {
			return false, why
		}
		c.chosen[i] = chosen
	}
	return true, ""
}

// taken reports whether an earlier request of this allocation chose id.
func taken(c *Candidate, id string) bool {
	for _, chosen := range c.chosen {
		for _, r := range chosen {
			if r.inst.ID == id {
				return true
			}
		}
	}
	return false
}

// whole chooses count instances nothing holds.
func (f *DeviceFit) whole(c *Candidate, a deviceAsk, nd *nodeDevices, matching []instanceRef) ([]instanceRef, string) {
	need := max(int(a.req.Count), 1)
	free := f.free[:0]
	for _, r := range matching {
		if r.inst.Healthy && c.Usage.Devices[r.inst.ID].Free() && !taken(c, r.inst.ID) {
			free = append(free, r)
		}
	}
	f.free = free
	if len(free) < need {
		if len(matching) < need {
			// Never fits here, whatever ends: say so apart from "busy".
			return nil, fmt.Sprintf("devices: %s: node has %d matching, need %d", a.req.Name, len(matching), need)
		}
		if c.Usage.HeldFor != "" {
			return nil, fmt.Sprintf("devices: %s: free GPUs held for waiting gang %q", a.req.Name, c.Usage.HeldFor)
		}
		return nil, fmt.Sprintf("devices: %s: %d of %d free, need %d", a.req.Name, len(free), len(matching), need)
	}
	chosen := f.picker.Pick(free, need, a.req.Topology, nd.links)
	if chosen == nil {
		return nil, fmt.Sprintf("devices: %s: no %d free instances share one %s domain", a.req.Name, need, a.req.Topology)
	}
	return chosen, ""
}

// slices chooses count instances with room for the slice, tightest free
// compute first (then lowest ID), among those whose sharing mode takes
// slices; a free MIG instance that holds the slice comes first, taken
// whole (sharing.go).
func (f *DeviceFit) slices(c *Candidate, a deviceAsk, matching []instanceRef) ([]instanceRef, string) {
	need := max(int(a.req.Count), 1)
	compute, mem := max(a.req.Compute, 1), a.req.MemoryMB
	free := f.free[:0]
	computeRoom := false
	var scan sliceScan // the node's sharing modes (sharing.go)
	for _, r := range matching {
		if !r.inst.Healthy || taken(c, r.inst.ID) || !scan.admit(c, r, a.req) {
			continue
		}
		use := c.Usage.Devices[r.inst.ID]
		if use.FreeCompute() < compute {
			continue
		}
		computeRoom = true
		if mem > 0 && r.memMB > 0 && use.MemoryMB+mem > r.memMB {
			continue
		}
		free = append(free, r)
	}
	f.free = free
	if chosen := scan.pickMIG(need); chosen != nil {
		return chosen, ""
	}
	if len(free) < need {
		if why := scan.reason(a.req); why != "" {
			return nil, why
		}
		if computeRoom && mem > 0 {
			return nil, fmt.Sprintf("devices: %s: GPU memory exhausted, need %s free on one GPU", a.req.Name, structs.FormatBytes(mem<<20))
		}
		return nil, fmt.Sprintf("devices: %s: no GPU with %d%% compute free", a.req.Name, compute)
	}
	slices.SortStableFunc(free, func(x, y instanceRef) int {
		return c.Usage.Devices[x.inst.ID].FreeCompute() - c.Usage.Devices[y.inst.ID].FreeCompute()
	})
	return slices.Clone(free[:need]), ""
}

// allocatedDevices groups chosen instances by device group, in order of
// first appearance, with sorted IDs, and the slice req asks of each.
func allocatedDevices(chosen []instanceRef, req *structs.RequestedDevice) []*structs.AllocatedDeviceResource {
	var out []*structs.AllocatedDeviceResource
	byGroup := map[*structs.NodeDeviceResource]*structs.AllocatedDeviceResource{}
	for _, r := range chosen {
		d, ok := byGroup[r.group]
		if !ok {
			d = &structs.AllocatedDeviceResource{Vendor: r.group.Vendor, Type: r.group.Type, Name: r.group.Name}
			if isSlice(req) && !heldWhole(r) {
				d.Compute, d.MemoryMB = req.Compute, req.MemoryMB
			}
			byGroup[r.group] = d
			out = append(out, d)
		}
		d.DeviceIDs = append(d.DeviceIDs, r.inst.ID)
	}
	for _, d := range out {
		slices.Sort(d.DeviceIDs)
	}
	return out
}
