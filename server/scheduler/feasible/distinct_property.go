package feasible

import (
	"fmt"
	"strconv"

	"github.com/droverhq/drover/structs"
)

// DistinctProperties counts, for one job and one plan, the job's
// allocations per value of each attribute named by a distinct_property
// constraint, with Nomad's semantics:
//
//	constraint {
//	  operator  = "distinct_property"
//	  attribute = "${meta.rack}"
//	  value     = "2"   # at most 2 per rack; default 1
//	}
//
// A job-level constraint counts every allocation of the job; a group-level
// one (or a task's, which constrains its group) counts the group's only.
// The counts start from the allocations that stay (non-terminal in state,
// not stopped by the plan) plus those the plan already places, and grow
// with each Placed call, so every group's Filter sees the placements of
// the others: build one per job and plan, not one per group. Not safe
// for concurrent use.
type DistinctProperties struct {
	job    []*propertyCount
	groups map[string][]*propertyCount
}

// propertyCount is one distinct_property constraint and the allocations
// it counts per attribute value.
type propertyCount struct {
	constraint *structs.Constraint
	limit      int
	// invalid is the reason every node is filtered when the constraint's
	// value is not a positive count ("" when it is).
	invalid string
	used    map[string]int
}

// NewDistinctProperties returns the counts for job's distinct_property
// constraints. live are the job's allocations that stay: non-terminal in
// state and not stopped by the plan, plus the plan's placements so far
// (terminal ones and repeats of an ID are skipped). nodeOf resolves an
// allocation's node (nil for one that is gone: such an allocation counts
// for no value, as does one on a node without the attribute); it is only
// called when the job has such a constraint.
func NewDistinctProperties(job *structs.Job, live []*structs.Allocation, nodeOf func(nodeID string) *structs.Node) *DistinctProperties {
	d := &DistinctProperties{groups: map[string][]*propertyCount{}}
	if job == nil {
		return d
	}
	d.job = newPropertyCounts(job.Constraints)
	for _, tg := range job.TaskGroups {
		cs := append([]*structs.Constraint(nil), tg.Constraints...)
		for _, t := range tg.Tasks {
			cs = append(cs, t.Constraints...)
		}
		if pcs := newPropertyCounts(cs); len(pcs) > 0 {
			d.groups[tg.Name] = pcs
		}
	}
	if len(d.job) == 0 && len(d.groups) == 0 {
		return d
	}
	seen := map[string]bool{}
	for _, a := range live {
		if seen[a.ID] || a.TerminalStatus() || a.Namespace != job.Namespace || a.JobID != job.ID {
			continue
		}
		seen[a.ID] = true
		if n := nodeOf(a.NodeID); n != nil {
			d.add(a.TaskGroup, n)
		}
	}
	return d
}

func newPropertyCounts(cs []*structs.Constraint) []*propertyCount {
	var out []*propertyCount
	for _, c := range cs {
		if c == nil || c.Operand != structs.ConstraintDistinctProperty {
			continue
		}
		pc := &propertyCount{constraint: c, limit: 1, used: map[string]int{}}
		if c.RTarget != "" {
			n, err := strconv.Atoi(c.RTarget)
			if err != nil || n < 1 {
				pc.invalid = fmt.Sprintf("distinct_property: %s: value %q is not a positive count", c.LTarget, c.RTarget)
			}
			pc.limit = n
		}
		out = append(out, pc)
	}
	return out
}

// add counts one allocation of group on n.
func (d *DistinctProperties) add(group string, n *structs.Node) {
	resolve := NodeResolver(n)
	for _, pcs := range [][]*propertyCount{d.job, d.groups[group]} {
		for _, pc := range pcs {
			if v, ok := resolve(pc.constraint.LTarget); ok {
				pc.used[v]++
			}
		}
	}
}

// Filter returns the CandidateFilter for tg, or nil when no
// distinct_property constraint applies to it.
func (d *DistinctProperties) Filter(tg *structs.TaskGroup) *DistinctPropertyFilter {
	if len(d.job) == 0 && len(d.groups[tg.Name]) == 0 {
		return nil
	}
	counts := append(append([]*propertyCount(nil), d.job...), d.groups[tg.Name]...)
	return &DistinctPropertyFilter{props: d, group: tg.Name, counts: counts}
}

// DistinctPropertyFilter rejects nodes whose value of a distinct_property
// attribute already holds as many of the job's (or group's) allocations
// as the constraint allows, and nodes without the attribute. The reason
// names the value and its count: "distinct_property: ${meta.rack}=r1 has
// 1 of 1". The caller reports each placement of the group with Placed.
type DistinctPropertyFilter struct {
	props  *DistinctProperties
	group  string
	counts []*propertyCount // the job's, then the group's
}

var _ CandidateFilter = (*DistinctPropertyFilter)(nil)

// FilterCandidate implements CandidateFilter. A nil filter admits every
// node.
func (f *DistinctPropertyFilter) FilterCandidate(c *Candidate) (bool, string) {
	if f == nil {
		return true, ""
	}
	resolve := NodeResolver(c.Node)
	for _, pc := range f.counts {
		if pc.invalid != "" {
			return false, pc.invalid
		}
		attr := pc.constraint.LTarget
		v, ok := resolve(attr)
		if !ok {
			return false, fmt.Sprintf("distinct_property: %s not set", attr)
		}
		if used := pc.used[v]; used >= pc.limit {
			return false, fmt.Sprintf("distinct_property: %s=%s has %d of %d", attr, v, used, pc.limit)
		}
	}
	return true, ""
}

// Placed counts one more allocation of the group on n, for the group's
// constraints and the job's (which every group's filter shares). A nil
// filter counts nothing.
func (f *DistinctPropertyFilter) Placed(n *structs.Node) {
	if f != nil && n != nil {
		f.props.add(f.group, n)
	}
}
