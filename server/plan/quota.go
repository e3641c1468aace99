package plan

import (
	"fmt"
	"slices"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// QuotaState is what the quota re-check reads (server/state/quota.go);
// *state.StateSnapshot satisfies it.
type QuotaState interface {
	NamespaceByName(ws memdb.WatchSet, name string) (*structs.Namespace, error)
	QuotaSpecByName(ws memdb.WatchSet, name string) (*structs.QuotaSpec, error)
	QuotaUsage(ws memdb.WatchSet, name string) (*structs.QuotaUsage, error)
	QuotaChargeOf(allocID string) (*structs.QuotaCharge, error)
}

// checkQuotas re-checks the quotas of the namespaces the plan places
// into, on the nodes the per-node re-check accepted: a scheduler checked
// them against its snapshot, but another plan may have used the room
// since. Nodes are taken in verdict order, each with its stops and new
// placements; a node whose placements would take a quota past its limit
// is rejected (its stops with it) with the quota's reason, so two
// racing plans cannot both take the last of a quota.
func checkQuotas(st State, plan *structs.Plan, verdicts []Verdict) ([]Verdict, error) {
	quotas, err := planQuotas(st, plan)
	if err != nil || len(quotas) == 0 {
		return verdicts, err
	}
	for _, q := range quotas {
		if err := q.check(st, plan, verdicts); err != nil {
			return nil, err
		}
	}
	return verdicts, nil
}

// planQuota is one quota a plan places into, as the latest state has it.
type planQuota struct {
	name  string
	limit *structs.RegionLimit
	usage *structs.QuotaUsage
}

// planQuotas returns the quotas, with a limit in the plan's region, of
// the namespaces the plan places into.
func planQuotas(st State, plan *structs.Plan) ([]*planQuota, error) {
	region := ""
	if plan.Job != nil {
		region = plan.Job.Region
	}
	namespaces := map[string]bool{}
	for _, placed := range plan.NodeAllocation {
		for _, a := range placed {
			namespaces[a.Namespace] = true
			if region == "" && a.Job != nil {
				region = a.Job.Region
			}
		}
	}
	seen := map[string]bool{}
	var out []*planQuota
	for name := range namespaces {
		ns, err := st.NamespaceByName(nil, namespaceOf(name))
		if err != nil {
			return nil, fmt.Errorf("read namespace %q: %w", name, err)
		}
		if ns == nil || ns.Quota == "" || seen[ns.Quota] {
			continue
		}
		seen[ns.Quota] = true
		spec, err := st.QuotaSpecByName(nil, ns.Quota)
		if err != nil {
			return nil, fmt.Errorf("read quota %q: %w", ns.Quota, err)
		}
		limit := spec.LimitFor(region)
		if limit == nil {
			continue
		}
		usage, err := st.QuotaUsage(nil, ns.Quota)
		if err != nil {
			return nil, fmt.Errorf("read usage of quota %q: %w", ns.Quota, err)
		}
		if usage != nil {
			out = append(out, &planQuota{name: ns.Quota, limit: limit, usage: usage})
		}
	}
	slices.SortFunc(out, func(a, b *planQuota) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// check walks the accepted nodes, rejecting those whose new placements
// do not fit what is left of the quota. Nodes without new placements
// (stops only) always commit, so what they release counts first.
func (q *planQuota) check(st State, plan *structs.Plan, verdicts []Verdict) error {
	type part struct {
		v                *Verdict
		released, placed structs.QuotaResources
	}
	used := q.usage.Used
	var placing []part
	for i := range verdicts {
		v := &verdicts[i]
		if v.Reason != "" {
			continue
		}
		released, err := q.charged(st, plan.NodeUpdate[v.NodeID])
		if err != nil {
			return err
		}
		placed, err := q.newPlacements(st, v.NodeID, plan.NodeAllocation[v.NodeID])
		if err != nil {
			return err
		}
		if placed.IsZero() {
			used = used.Sub(released)
			continue
		}
		placing = append(placing, part{v, released, placed})
	}
	for _, p := range placing {
		after := used.Sub(p.released)
		if ok, reason := structs.QuotaCheck(q.name, q.limit, after, p.placed); !ok {
			p.v.Reason = reason
			continue
		}
		used = after.Add(p.placed)
	}
	return nil
}

// charged sums what the allocations (stops) hold against the quota now.
func (q *planQuota) charged(st State, allocs []*structs.Allocation) (structs.QuotaResources, error) {
	var sum structs.QuotaResources
	for _, a := range allocs {
		c, err := st.QuotaChargeOf(a.ID)
		if err != nil {
			return sum, fmt.Errorf("read quota charge of alloc %s: %w", a.ID, err)
		}
		if c != nil && slices.Contains(q.usage.Namespaces, c.Namespace) {
			sum = sum.Add(c.Used)
		}
	}
	return sum, nil
}

// newPlacements sums what the node's placements in the quota's
// namespaces that are not live yet would hold.
func (q *planQuota) newPlacements(st State, nodeID string, placed []*structs.Allocation) (structs.QuotaResources, error) {
	var sum structs.QuotaResources
	var node *structs.Node
	read := false
	for _, a := range placed {
		if !slices.Contains(q.usage.Namespaces, namespaceOf(a.Namespace)) {
			continue
		}
		c, err := st.QuotaChargeOf(a.ID)
		if err != nil {
			return sum, fmt.Errorf("read quota charge of alloc %s: %w", a.ID, err)
		}
		if c != nil {
			continue // live already: charged in the usage
		}
		if !read {
			if node, err = st.NodeByID(nil, nodeID); err != nil {
				return sum, err
			}
			read = true
		}
		sum = sum.Add(structs.AllocQuotaResources(a, node))
	}
	return sum, nil
}

func namespaceOf(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}
