package feasible

import (
	"cmp"
	"slices"

	"github.com/droverhq/drover/structs"
)

// listView is a View over a fixed list of nodes and the allocations on
// them, ordered the way the state store's usage indexes order them.
type listView struct {
	nodes  []*structs.Node
	usage  map[string]*structs.NodeUsage
	allocs map[string][]*structs.Allocation
	walked []string // node IDs yielded, in order
}

func newListView(nodes []*structs.Node, byNode map[string][]*structs.Allocation) *listView {
	v := &listView{nodes: nodes, usage: map[string]*structs.NodeUsage{}, allocs: byNode}
	for _, n := range nodes {
		u := &structs.NodeUsage{NodeID: n.ID}
		for _, a := range byNode[n.ID] {
			u.Add(a, 1)
		}
		u.Refresh(n)
		v.usage[n.ID] = u
	}
	return v
}

func (v *listView) Walk(order Order, fn func(*structs.Node) bool) error {
	nodes := slices.Clone(v.nodes)
	key := func(n *structs.Node) int { return 0 }
	switch order.By {
	case OrderFreeGPUs:
		key = func(n *structs.Node) int { return v.usage[n.ID].FreeGPUs }
	case OrderFreeCompute:
		key = func(n *structs.Node) int { return v.usage[n.ID].MaxFreeCompute }
	}
	nodes = slices.DeleteFunc(nodes, func(n *structs.Node) bool { return key(n) < order.Min })
	slices.SortStableFunc(nodes, func(a, b *structs.Node) int { return cmp.Compare(key(a), key(b)) })
	for _, n := range nodes {
		v.walked = append(v.walked, n.ID)
		if !fn(n) {
			return nil
		}
	}
	return nil
}

func (v *listView) Below(order Order, limit int, fn func(*structs.Node, *structs.NodeUsage)) error {
	for _, node := range v.nodes {
		u := v.usage[node.ID]
		switch {
		case limit == 0:
			return nil
		case order.By == OrderFreeGPUs && u.FreeGPUs < order.Min,
			order.By == OrderFreeCompute && u.MaxFreeCompute < order.Min:
			fn(node, u)
			limit--
		}
	}
	return nil
}

func (v *listView) Usage(n *structs.Node) *structs.NodeUsage { return v.usage[n.ID] }

func (v *listView) JobAllocs(nodeID string) []*structs.Allocation { return v.allocs[nodeID] }
