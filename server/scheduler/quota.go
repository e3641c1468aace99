package scheduler

import (
	"fmt"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// QuotaState is what the quota check reads: a namespace's quota and what
// the namespaces under that quota hold (server/state/quota.go). It is
// satisfied by *state.StateSnapshot.
type QuotaState interface {
	NamespaceByName(ws memdb.WatchSet, name string) (*structs.Namespace, error)
	QuotaSpecByName(ws memdb.WatchSet, name string) (*structs.QuotaSpec, error)
	QuotaUsage(ws memdb.WatchSet, name string) (*structs.QuotaUsage, error)
	// QuotaChargeOf is what a live allocation counts against its
	// namespace's quota (nil: nothing).
	QuotaChargeOf(allocID string) (*structs.QuotaCharge, error)
}

// quotaGate admits placements while the job's namespace stays within its
// quota in the job's region. It starts from what the quota's namespaces
// hold in state, less what the plan stops of theirs, plus what the plan
// places; each placement it admits is added. The zero value is ready:
// it reads state at the first placement.
type quotaGate struct {
	loaded bool
	name   string               // the quota; "" when nothing caps the job
	limit  *structs.RegionLimit // the quota's limit in the job's region
	used   structs.QuotaResources
	// namespaces are those under the quota.
	namespaces []string
}

// credit takes off the quota's usage what victims, allocations a
// placement is about to preempt, count against it (they stop with it),
// and returns the function that puts it back if the placement is not
// made after all.
func (g *quotaGate) credit(st State, plan *structs.Plan, job *structs.Job, victims []*structs.Allocation) (undo func(), err error) {
	undo = func() {}
	if len(victims) == 0 || job == nil {
		return undo, nil
	}
	if err := g.load(st, plan, job); err != nil {
		return undo, err
	}
	if g.name == "" {
		return undo, nil
	}
	before := g.used
	for _, v := range victims {
		c, err := st.QuotaChargeOf(v.ID)
		if err != nil {
			return undo, fmt.Errorf("read quota charge of alloc %s: %w", v.ID, err)
		}
		if c != nil && slices.Contains(g.namespaces, c.Namespace) {
			g.used = g.used.Sub(c.Used)
		}
	}
	return func() { g.used = before }, nil
}

// admit returns option when placing it keeps the job's namespace within
// its quota, and counts it; otherwise it records why in metric's
// QuotaExhausted and returns nil. A nil option is returned as is.
func (g *quotaGate) admit(st State, plan *structs.Plan, job *structs.Job, option *feasible.Option, metric *structs.AllocMetric) (*feasible.Option, error) {
	if option == nil || job == nil {
		return option, nil
	}
	if err := g.load(st, plan, job); err != nil {
		return nil, err
	}
	if g.name == "" {
		return option, nil
	}
	need := structs.AllocQuotaResources(&structs.Allocation{AllocatedResources: option.Resources}, option.Node)
	ok, reason := structs.QuotaCheck(g.name, g.limit, g.used, need)
	if !ok {
		if !slices.Contains(metric.QuotaExhausted, reason) {
			metric.QuotaExhausted = append(metric.QuotaExhausted, reason)
		}
		return nil, nil
	}
	g.used = g.used.Add(need)
	return option, nil
}

// load reads (once) the job's namespace, its quota and what the quota's
// namespaces hold, adjusted by what plan already stops and places.
func (g *quotaGate) load(st State, plan *structs.Plan, job *structs.Job) error {
	if g.loaded {
		return nil
	}
	g.loaded = true
	ns, err := st.NamespaceByName(nil, job.Namespace)
	if err != nil {
		return fmt.Errorf("read namespace %q: %w", job.Namespace, err)
	}
	if ns == nil || ns.Quota == "" {
		return nil
	}
	spec, err := st.QuotaSpecByName(nil, ns.Quota)
	if err != nil {
		return fmt.Errorf("read quota %q: %w", ns.Quota, err)
	}
	limit := spec.LimitFor(job.Region)
	if limit == nil {
		return nil
	}
	usage, err := st.QuotaUsage(nil, ns.Quota)
	if err != nil || usage == nil {
		return err
	}
	used, err := planQuotaUsage(st, plan, usage)
	if err != nil {
		return err
	}
	g.name, g.limit, g.used, g.namespaces = ns.Quota, limit, used, usage.Namespaces
	return nil
}

// planQuotaUsage returns what the quota's namespaces would hold once the
// plan so far commits: usage, less the charges of the live allocations
// the plan stops in those namespaces (a destructive update replaces
// allocations within the quota they held), plus the plan's placements
// that are not live yet. Placements made by the placer go through the
// gate after this, so usually there are none.
func planQuotaUsage(st State, plan *structs.Plan, usage *structs.QuotaUsage) (structs.QuotaResources, error) {
	used := usage.Used
	for _, stops := range plan.NodeUpdate {
		for _, a := range stops {
			c, err := st.QuotaChargeOf(a.ID)
			if err != nil {
				return used, fmt.Errorf("read quota charge of alloc %s: %w", a.ID, err)
			}
			if c != nil && slices.Contains(usage.Namespaces, c.Namespace) {
				used = used.Sub(c.Used)
			}
		}
	}
	for nodeID, placed := range plan.NodeAllocation {
		node, err := st.NodeByID(nil, nodeID)
		if err != nil {
			return used, fmt.Errorf("read node %s: %w", nodeID, err)
		}
		for _, a := range placed {
			c, err := st.QuotaChargeOf(a.ID)
			if err != nil {
				return used, fmt.Errorf("read quota charge of alloc %s: %w", a.ID, err)
			}
			if c == nil && slices.Contains(usage.Namespaces, a.Namespace) {
				used = used.Add(structs.AllocQuotaResources(a, node))
			}
		}
	}
	return used, nil
}
