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
}

// deviceMatcher finds, per node, the instances each device request may
// use by name and constraints (health and use aside). Results are
// memoized per node: a Stack lives for one evaluation, and nodes do not
// change within it. DeviceConstraintFilter and DeviceFit share one.
type deviceMatcher struct {
	asks    []deviceAsk
	checker *Checker
	memo    map[string]*nodeDevices
}

// nodeDevices is a node's matching instances per request, sorted by ID,
// and why the node cannot serve some request at all ("" when it can).
type nodeDevices struct {
	perAsk [][]instanceRef
	reason string
	insts  []*structs.NodeDevice // by instanceRef.pos
	links  linkMatrix            // built on first use
}

// linkMatrix returns the link ranks between the matched instances.
func (nd *nodeDevices) linkMatrix() linkMatrix {
	if nd.links == nil {
		nd.links = newLinkMatrix(nd.insts)
	}
	return nd.links
}

func newDeviceMatcher(asks []deviceAsk, checker *Checker) *deviceMatcher {
	return &deviceMatcher{asks: asks, checker: checker, memo: map[string]*nodeDevices{}}
}

func (m *deviceMatcher) match(n *structs.Node) *nodeDevices {
	if nd, ok := m.memo[n.ID]; ok {
		return nd
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
	nd.insts = insts
	m.memo[n.ID] = nd
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
		for _, inst := range g.Instances {
			if c := m.failedConstraint(a.req.Constraints, g, inst); c != "" {
				if failed == "" {
					failed = c
				}
				continue
			}
			refs = append(refs, instanceRef{group: g, inst: inst})
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

// DeviceFit chooses, for every device request of the group, free healthy
// instances that match it: not held by another allocation proposed on the
// node nor by an earlier request of this one. A request may take
// instances of several matching groups; which ones is TopologyPicker's
// choice. It records the choice on the candidate; when too few are free
// the node is exhausted, with a dimension such as
// "devices: nvidia/gpu: 1 of 4 free, need 2", or "devices: nvidia/gpu:
// node has 4 matching, need 5" when the node could never hold the request.
type DeviceFit struct {
	devices *deviceMatcher
	picker  *TopologyPicker
}

// Fit implements Fit.
func (f *DeviceFit) Fit(c *Candidate) (bool, string) {
	if len(f.devices.asks) == 0 {
		return true, ""
	}
	nd := f.devices.match(c.Node)
	held := heldDevices(c.Proposed)
	c.chosen = make([][]instanceRef, len(f.devices.asks))
	for i, a := range f.devices.asks {
		need := max(int(a.req.Count), 1)
		var free []instanceRef
		for _, r := range nd.perAsk[i] {
			if r.inst.Healthy && !held[r.inst.ID] {
				free = append(free, r)
			}
		}
		if len(free) < need {
			if total := len(nd.perAsk[i]); total < need {
				// Never fits here, whatever ends: say so apart from "busy".
				return false, fmt.Sprintf("devices: %s: node has %d matching, need %d", a.req.Name, total, need)
			}
			return false, fmt.Sprintf("devices: %s: %d of %d free, need %d", a.req.Name, len(free), len(nd.perAsk[i]), need)
		}
		chosen := f.picker.Pick(free, need, a.req.Topology, nd.linkMatrix())
		if chosen == nil {
			return false, fmt.Sprintf("devices: %s: no %d free instances share one %s domain", a.req.Name, need, a.req.Topology)
		}
		if held == nil {
			held = map[string]bool{}
		}
		for _, r := range chosen {
			held[r.inst.ID] = true
		}
		c.chosen[i] = chosen
	}
	return true, ""
}

// heldDevices returns the instance IDs the allocations hold (nil when
// none).
func heldDevices(allocs []*structs.Allocation) map[string]bool {
	var held map[string]bool
	for _, a := range allocs {
		if a.AllocatedResources == nil {
			continue
		}
		for _, t := range a.AllocatedResources.Tasks {
			for _, d := range t.Devices {
				for _, id := range d.DeviceIDs {
					if held == nil {
						held = map[string]bool{}
					}
					held[id] = true
				}
			}
		}
	}
	return held
}

// allocatedDevices groups chosen instances by device group, in order of
// first appearance, with sorted IDs.
func allocatedDevices(chosen []instanceRef) []*structs.AllocatedDeviceResource {
	var out []*structs.AllocatedDeviceResource
	byGroup := map[*structs.NodeDeviceResource]*structs.AllocatedDeviceResource{}
	for _, r := range chosen {
		d, ok := byGroup[r.group]
		if !ok {
			d = &structs.AllocatedDeviceResource{Vendor: r.group.Vendor, Type: r.group.Type, Name: r.group.Name}
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
