package plan

import (
	"fmt"
	"slices"

	"github.com/droverhq/drover/structs"
)

// evaluateInPlace returns why the in-place updates of a plan for nodeID
// cannot commit, or "". An in-place update moves a live allocation to a
// new job version without touching its node or resources, so it needs no
// room and no ready node: only that the allocation is still on the node,
// not stopped or finished since the scheduler read it (committing would
// bring it back), and that the update keeps its resources.
func evaluateInPlace(st State, nodeID string, updates []*structs.Allocation) (string, error) {
	existing, err := st.AllocsByNode(nil, nodeID)
	if err != nil {
		return "", err
	}
	current := make(map[string]*structs.Allocation, len(existing))
	for _, a := range existing {
		current[a.ID] = a
	}
	for _, a := range updates {
		prev := current[a.ID]
		switch {
		case a.NodeID != nodeID:
			return fmt.Sprintf("alloc %s names node %s", structs.ShortID(a.ID), a.NodeID), nil
		case prev == nil:
			return fmt.Sprintf("alloc %s to update in place is not on the node", structs.ShortID(a.ID)), nil
		case prev.TerminalStatus():
			return fmt.Sprintf("alloc %s to update in place is no longer running", structs.ShortID(a.ID)), nil
		case !sameResources(prev, a):
			return fmt.Sprintf("alloc %s: an in-place update must keep its resources", structs.ShortID(a.ID)), nil
		}
	}
	return "", nil
}

// sameResources reports whether a and b hold the same CPU, memory and
// device instances.
func sameResources(a, b *structs.Allocation) bool {
	ac, am := a.Comparable()
	bc, bm := b.Comparable()
	return ac == bc && am == bm && slices.Equal(a.DeviceIDs(), b.DeviceIDs())
}
