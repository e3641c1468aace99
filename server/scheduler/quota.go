package scheduler

import (
	"fmt"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// quotaGate is the quota admission stage (feasible.Gate): it admits
// placements while the job's namespace stays within its quota in the
// job's region. It starts from what the quota's namespaces hold in state,
// less what the plan stops of theirs, plus what the plan places; each
// placement it admits is added. It reads state at the first placement.
type quotaGate struct {
	st   quotaReader
	plan *structs.Plan
	job  *structs.Job

	loaded bool
	name   string               // the quota; "" when nothing caps the job
	limit  *structs.RegionLimit // the quota's limit in the job's region
	used   structs.QuotaResources
	// namespaces are those under the quota.
	namespaces []string
}

// quotaReader is what the quota gate reads.
type quotaReader interface {
	QuotaState
	NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error)
}

var _ feasible.Gate = (*quotaGate)(nil)

// newQuotaGate returns the quota gate for job's placements in plan (job
// nil: every option passes).
func newQuotaGate(st quotaReader, plan *structs.Plan, job *structs.Job) *quotaGate {
	return &quotaGate{st: st, plan: plan, job: job}
}

// Admit implements feasible.Gate: what the victims count against the
// quota is taken off first (they stop with the placement).
func (g *quotaGate) Admit(o *feasible.Option, victims []*structs.Allocation, m *structs.AllocMetric) (*feasible.Option, func(), error) {
	if o == nil || g.job == nil {
		return o, nil, nil
	}
	if err := g.load(); err != nil {
		return nil, nil, err
	}
	if g.name == "" {
		return o, nil, nil // nothing caps the job: nothing counted
	}
	before := g.used
	undo := func() { g.used = before }
	if err := g.credit(victims); err != nil {
		return nil, nil, err
	}
	admitted, err := g.admit(o, m)
	if err != nil || admitted == nil {
		undo()
		return nil, nil, err
	}
	return admitted, undo, nil
}

// credit takes off the quota's usage what victims, allocations a
// placement is about to preempt, count against it.
func (g *quotaGate) credit(victims []*structs.Allocation) error {
	for _, v := range victims {
		c, err := g.st.QuotaChargeOf(v.ID)
		if err != nil {
			return fmt.Errorf("read quota charge of alloc %s: %w", v.ID, err)
		}
		if c != nil && slices.Contains(g.namespaces, c.Namespace) {
			g.used = g.used.Sub(c.Used)
		}
	}
	return nil
}

// admit returns option when placing it keeps the job's namespace within
// its quota, and counts it; otherwise it records why in metric's
// QuotaExhausted and returns nil. The gate is loaded.
func (g *quotaGate) admit(option *feasible.Option, metric *structs.AllocMetric) (*feasible.Option, error) {
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
func (g *quotaGate) load() error {
	if g.loaded {
		return nil
	}
	g.loaded = true
	st, plan, job := g.st, g.plan, g.job
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
func planQuotaUsage(st quotaReader, plan *structs.Plan, usage *structs.QuotaUsage) (structs.QuotaResources, error) {
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
