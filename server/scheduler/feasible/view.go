package feasible

import (
	"github.com/droverhq/drover/structs"
)

// Orders in which a View walks nodes.
const (
	// OrderAll walks every node, in the view's own order.
	OrderAll = iota
	// OrderFreeGPUs walks nodes with at least Min wholly free healthy
	// GPUs, those with fewest first.
	OrderFreeGPUs
	// OrderFreeCompute walks nodes with a healthy GPU that has at least
	// Min percent of its compute free, the tightest first.
	OrderFreeCompute
)

// Order says which nodes a placement wants to see first.
type Order struct {
	By  int
	Min int
	// Emptiest walks the ordered nodes the other way: most free first
	// (the spread algorithm).
	Emptiest bool
}

// View is the cluster as one placement sees it: the plan built so far
// applied to the scheduler's snapshot. The scheduler implements it.
type View interface {
	// Walk calls fn with nodes in order until fn returns false. An
	// ordered walk may also yield nodes outside the order (nodes the
	// plan changed, whose place in the order is stale); it must yield
	// each node at most once.
	Walk(order Order, fn func(*structs.Node) bool) error
	// Usage is what the node's allocations hold, the plan's included.
	Usage(n *structs.Node) *structs.NodeUsage
	// JobAllocs are the job's allocations on the node, the plan's
	// included and those it stops excluded.
	JobAllocs(nodeID string) []*structs.Allocation
	// Below calls fn with up to limit nodes an ordered walk does not
	// yield (those below the order's Min), nearest the Min first, and
	// their usage.
	Below(order Order, limit int, fn func(*structs.Node, *structs.NodeUsage)) error
}
