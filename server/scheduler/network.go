package scheduler

import (
	"fmt"
	"slices"
	"sort"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// A gang with a network block (structs.GangNetwork) keeps its members
// under one network domain: the nodes that share a value of the node
// attribute topology.<level>. The domain is chosen here, once per gang
// and plan, before any of its placements: the chain then places each one
// as usual, restricted to the chosen domain's nodes by a candidate filter
// (domainFilter). The choice is by free GPUs (free healthy GPUs, in
// multiples of the largest per-allocation ask; nodes for a gang without
// GPUs) on the nodes that pass the node filters of the gang's group with
// the largest GPU ask:
//
//   - a domain already holding live members of the gang is kept while it
//     fits what the gang still needs (preferred: and then others, largest
//     first, when it does not);
//   - otherwise, among the domains that fit every placement, the fullest
//     (fewest free GPUs), so one domain fills before another is opened;
//   - none fits every placement: one that fits the gang's min, most free
//     first;
//   - none fits the min: required fails the gang with a reason naming the
//     level; preferred takes the fewest domains that fit together,
//     largest first (all nodes when even those are short).

// domainPick is the choice for one gang's placements.
type domainPick struct {
	filter feasible.CandidateFilter // nil: any node
	fail   string                   // the gang cannot be placed: why
}

// domainFilter admits only nodes of the chosen domains.
type domainFilter struct {
	level   string
	allowed map[string]bool
	reason  string
}

var _ feasible.CandidateFilter = (*domainFilter)(nil)

// FilterCandidate implements feasible.CandidateFilter.
func (f *domainFilter) FilterCandidate(c *feasible.Candidate) (bool, string) {
	if f.allowed[c.Node.TopologyValue(f.level)] {
		return true, ""
	}
	return false, f.reason
}

// networkGang is what pickDomains needs to know of one gang.
type networkGang struct {
	net    *structs.GangNetwork
	groups map[string]bool
	lead   *structs.TaskGroup // the group of the largest GPU ask
	unit   int                // the largest GPU ask of one allocation (0: no GPUs)
	all    int                // GPUs (or allocations, unit 0) of this plan's placements
	min    int                // of which the gang needs at least this many
}

// pickDomains chooses the domain of every gang of the job with a network
// block, keyed by group name; nil when none has one.
func (p *placer) pickDomains(job *structs.Job, places []placement) (map[string]*domainPick, error) {
	if job == nil || len(places) == 0 {
		return nil, nil
	}
	gangs := p.networkGangs(job, places)
	if len(gangs) == 0 {
		return nil, nil
	}
	nodes, err := p.state.Nodes(nil)
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	out := map[string]*domainPick{}
	for _, g := range gangs {
		// Only nodes the gang's largest group could use count.
		stack := feasible.NewStack(job, g.lead, p.eval.ID, p.stack...)
		var usable []*structs.Node
		for _, n := range nodes {
			if stack.Feasible(n) {
				usable = append(usable, n)
			}
		}
		pick := p.pickDomain(g, usable)
		for group := range g.groups {
			out[group] = pick
		}
	}
	return out, nil
}

// networkGangs sums, per gang with a network block, what this plan's
// placements ask.
func (p *placer) networkGangs(job *structs.Job, places []placement) map[string]*networkGang {
	gangs := map[string]*networkGang{}
	live := p.liveByGroup()
	for _, tg := range job.TaskGroups {
		if tg.Gang == nil || tg.Gang.Network == nil {
			continue
		}
		g := gangs[tg.GangName()]
		if g == nil {
			g = &networkGang{net: tg.Gang.Network, groups: map[string]bool{}}
			gangs[tg.GangName()] = g
		}
		g.groups[tg.Name] = true
		if g.lead == nil || groupGPUs(tg) > g.unit {
			g.lead = tg
		}
		g.unit = max(g.unit, groupGPUs(tg))
		g.min += max(tg.Gang.Min-live[tg.Name], 0) * max(groupGPUs(tg), 1)
	}
	for _, pl := range places {
		if g := gangs[pl.group.GangName()]; g != nil && pl.group.Gang != nil {
			g.all += max(groupGPUs(pl.group), 1)
		}
	}
	for name, g := range gangs {
		switch {
		case g.all == 0:
			delete(gangs, name)
		case g.unit == 0: // one ready node in the domain is enough
			g.all, g.min = 1, min(g.min, 1)
		}
	}
	return gangs
}

// pickDomain chooses one gang's domain among the nodes it could use.
func (p *placer) pickDomain(g *networkGang, usable []*structs.Node) *domainPick {
	level := g.net.Level
	free := map[string]int{}
	for _, n := range usable {
		v := n.TopologyValue(level)
		if v == "" {
			continue
		}
		free[v] += p.nodeSlots(n, g.unit)
	}
	home := p.gangDomain(g)
	switch {
	case home != "" && free[home] >= g.min:
		return p.restrict(level, home)
	case home != "" && g.net.Required():
		return &domainPick{fail: fmt.Sprintf("gang network: %s %s, where its members run, does not fit %s (%d free)",
			level, home, amount(g.min, g.unit), free[home])}
	}
	names := make([]string, 0, len(free))
	for v := range free {
		names = append(names, v)
	}
	// Fullest first, then by name: a domain fills before another opens.
	sort.Slice(names, func(i, j int) bool {
		if free[names[i]] != free[names[j]] {
			return free[names[i]] < free[names[j]]
		}
		return names[i] < names[j]
	})
	for _, v := range names {
		if free[v] >= g.all {
			return p.restrict(level, v)
		}
	}
	// Most free first, then by name.
	sort.Slice(names, func(i, j int) bool {
		if free[names[i]] != free[names[j]] {
			return free[names[i]] > free[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) > 0 && free[names[0]] >= g.min {
		return p.restrict(level, names[0])
	}
	if g.net.Required() {
		why := fmt.Sprintf("gang network: no %s fits %s", level, amount(g.min, g.unit))
		if len(names) > 0 {
			why += fmt.Sprintf(" (best %s: %d free)", names[0], free[names[0]])
		} else {
			why += fmt.Sprintf(" (no node the gang could use declares topology.%s)", level)
		}
		return &domainPick{fail: why}
	}
	return p.fewestDomains(level, names, free, home, g.min)
}

// fewestDomains is preferred's fallback: the members' domain (home, ""
// when none) and then the largest (names are largest first), until they
// hold need together; any node when even all of them are short.
func (p *placer) fewestDomains(level string, names []string, free map[string]int, home string, need int) *domainPick {
	if home != "" {
		names = append([]string{home}, slices.DeleteFunc(slices.Clone(names), func(v string) bool { return v == home })...)
	}
	sum := 0
	for i, v := range names {
		sum += free[v]
		if sum >= need {
			return p.restrict(level, names[:i+1]...)
		}
	}
	return &domainPick{}
}

// restrict admits only nodes in the named domains.
func (p *placer) restrict(level string, domains ...string) *domainPick {
	allowed := map[string]bool{}
	for _, d := range domains {
		allowed[d] = true
	}
	return &domainPick{filter: &domainFilter{level: level, allowed: allowed,
		reason: fmt.Sprintf("gang network: outside %s %v", level, domains)}}
}

// gangDomain is the domain of the gang's live members ("" when none has
// one): the first in node order.
func (p *placer) gangDomain(g *networkGang) string {
	ids := make([]string, 0, len(p.jobAllocs))
	for id := range p.jobAllocs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		for _, a := range p.jobAllocs[id] {
			if !g.groups[a.TaskGroup] {
				continue
			}
			n, err := p.state.NodeByID(nil, id)
			if err == nil && n.TopologyValue(g.net.Level) != "" {
				return n.TopologyValue(g.net.Level)
			}
		}
	}
	return ""
}

// nodeSlots is what the node has free for the gang: whole free GPUs in
// multiples of unit, or 1 for a gang without GPUs.
func (p *placer) nodeSlots(n *structs.Node, unit int) int {
	if unit == 0 {
		return 1
	}
	return p.Usage(n).FreeGPUs / unit * unit
}

// amount words a need: GPUs, or nodes for a gang without GPUs.
func amount(n, unit int) string {
	if unit == 0 {
		return "a ready node"
	}
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}

// groupGPUs is how many GPUs one allocation of the group asks for.
func groupGPUs(tg *structs.TaskGroup) int {
	n := 0
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		for _, d := range t.Resources.Devices {
			if _, typ, _, err := structs.ParseDeviceName(d.Name); err == nil && typ == "gpu" {
				n += int(max(d.Count, 1))
			}
		}
	}
	return n
}
