package feasible

import (
	"slices"
	"strings"

	"github.com/droverhq/drover/structs"
)

// nvlinkRank is the best link rank.
const nvlinkRank = 3

// linkRank orders link types, best first: NVLink, a shared PCIe switch,
// a shared host bridge, anything else.
func linkRank(kind string) int8 {
	switch kind {
	case structs.LinkNVLink:
		return nvlinkRank
	case structs.LinkPCIeSwitch:
		return 2
	case structs.LinkHostBridge:
		return 1
	}
	return 0
}

// linkMatrix holds the link rank between every two instances of a node,
// by position (instanceRef.pos). Links are symmetric; when an instance
// does not report a link, the other direction is used.
type linkMatrix [][]int8

func newLinkMatrix(insts []*structs.NodeDevice) linkMatrix {
	m := make(linkMatrix, len(insts))
	cells := make([]int8, len(insts)*len(insts))
	for i := range insts {
		m[i] = cells[i*len(insts) : (i+1)*len(insts)]
	}
	for i, a := range insts {
		for j := i + 1; j < len(insts); j++ {
			b := insts[j]
			kind, ok := a.Links[b.ID]
			if !ok {
				kind = b.Links[a.ID]
			}
			r := linkRank(kind)
			m[i][j], m[j][i] = r, r
		}
	}
	return m
}

// TopologyPicker chooses which of a request's free instances to take.
// For two or more it prefers the best-connected set (the sum of link
// ranks over all pairs); among equally connected sets it takes the one
// that cuts the fewest good links to the instances left free, so whole
// NVLink pairs stay available for later requests (a single GPU goes to an
// instance whose partner is already busy); remaining ties go to the
// lowest instance IDs, so the choice is deterministic.
//
// With topology "nvlink" every pair in the set must be NVLink-connected;
// with "numa" all instances must share a NUMA node. Pick returns nil when
// no such set exists.
type TopologyPicker struct{}

// Pick returns count instances of free (sorted by ID), sorted by ID, or
// nil. links ranks the links between the node's instances.
func (TopologyPicker) Pick(free []instanceRef, count int, topology string, links linkMatrix) []instanceRef {
	if count <= 0 || count > len(free) {
		return nil
	}
	if count == 1 {
		return pickOne(free, links)
	}
	p := picking{free: free, links: links, topology: topology, in: make([]bool, len(free)), set: make([]int, 0, count)}
	var best []int
	bestInternal, bestCut := -1, 0
	for start := range free {
		set := p.grow(start, count)
		if set == nil {
			continue
		}
		internal, cut := p.score(set)
		if internal > bestInternal || (internal == bestInternal && cut < bestCut) {
			best, bestInternal, bestCut = append(best[:0], set...), internal, cut
		}
	}
	if best == nil {
		return nil
	}
	slices.Sort(best)
	out := make([]instanceRef, len(best))
	for i, idx := range best {
		out[i] = free[idx]
	}
	return out
}

// pickOne is Pick for one instance: every single instance is equally
// connected inside, so the choice is the one whose good links to the other
// free instances are fewest (lowest ID among equals). It is the common
// case, done without Pick's scratch space.
func pickOne(free []instanceRef, links linkMatrix) []instanceRef {
	best, bestCut := 0, -1
	for i, r := range free {
		cut := 0
		for j, o := range free {
			if j != i {
				cut += int(links[r.pos][o.pos])
			}
		}
		if bestCut < 0 || cut < bestCut {
			best, bestCut = i, cut
		}
	}
	return []instanceRef{free[best]}
}

// picking is the working state of one Pick.
type picking struct {
	free     []instanceRef
	links    linkMatrix
	topology string
	in       []bool // scratch: members of the set being grown or scored
	set      []int  // scratch: the set being grown
}

func (p *picking) link(i, j int) int { return int(p.links[p.free[i].pos][p.free[j].pos]) }

// grow starts a set at free[start] and greedily adds the instance best
// connected to the members so far (lowest index among equals) until it
// has count members, or returns nil if the topology rule stops it first.
// The set returned is scratch space, valid until the next call.
func (p *picking) grow(start, count int) []int {
	clear(p.in)
	set := append(p.set[:0], start)
	p.in[start] = true
	for len(set) < count {
		pick, pickScore := -1, -1
		for j := range p.free {
			if p.in[j] || !p.joins(set, j) {
				continue
			}
			score := 0
			for _, m := range set {
				score += p.link(m, j)
			}
			if score > pickScore {
				pick, pickScore = j, score
			}
		}
		if pick < 0 {
			return nil
		}
		set = append(set, pick)
		p.in[pick] = true
	}
	p.set = set
	return set
}

// joins reports whether free[j] may join set under the topology rule.
func (p *picking) joins(set []int, j int) bool {
	for _, m := range set {
		switch p.topology {
		case "nvlink":
			if p.link(m, j) != nvlinkRank {
				return false
			}
		case "numa":
			nm, okm := numaNode(p.free[m])
			nj, okj := numaNode(p.free[j])
			if !okm || !okj || nm != nj {
				return false
			}
		}
	}
	return true
}

// score returns the link ranks summed over pairs inside set, and over
// pairs from set to the free instances outside it.
func (p *picking) score(set []int) (internal, cut int) {
	clear(p.in)
	for _, m := range set {
		p.in[m] = true
	}
	for i, m := range set {
		for _, o := range set[i+1:] {
			internal += p.link(m, o)
		}
		for j := range p.free {
			if !p.in[j] {
				cut += p.link(m, j)
			}
		}
	}
	return internal, cut
}

func numaNode(r instanceRef) (string, bool) {
	if v, ok := r.inst.Attributes[structs.DeviceAttrNUMANode]; ok {
		return strings.TrimSpace(v), true
	}
	v, ok := r.group.Attributes[structs.DeviceAttrNUMANode]
	return strings.TrimSpace(v), ok
}
