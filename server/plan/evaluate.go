package plan

import (
	"fmt"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// State is what the re-check reads; *state.StateSnapshot satisfies it.
type State interface {
	NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	LatestIndex() (uint64, error)
	QuotaState // quota.go
}

// Verdict is the re-check's answer for one node of a plan.
type Verdict struct {
	NodeID string
	// Reason is why the node's part of the plan was rejected; "" accepts.
	Reason string
}

// Evaluate re-checks every node of plan against st and returns one
// verdict per node, sorted by node ID. It reads, decides and writes
// nothing: Applier commits what it accepts.
func Evaluate(st State, plan *structs.Plan) ([]Verdict, error) {
	nodes := map[string]struct{}{}
	for id := range plan.NodeUpdate {
		nodes[id] = struct{}{}
	}
	for id := range plan.NodeAllocation {
		nodes[id] = struct{}{}
	}
	for id := range plan.NodeInPlaceUpdate {
		nodes[id] = struct{}{}
	}
	ids := make([]string, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	verdicts := make([]Verdict, 0, len(ids))
	for _, id := range ids {
		reason, err := evaluateNode(st, plan, id)
		if err != nil {
			return nil, fmt.Errorf("evaluate node %s: %w", id, err)
		}
		verdicts = append(verdicts, Verdict{NodeID: id, Reason: reason})
	}
	verdicts, err := checkQuotas(st, plan, verdicts) // quota.go
	if err != nil {
		return nil, err
	}
	return allAtOnce(plan, verdicts), nil
}

// allAtOnce refuses every node of an AllAtOnce plan (a gang's) when any
// is refused, naming the first refusal: such a plan commits whole or not
// at all.
func allAtOnce(plan *structs.Plan, verdicts []Verdict) []Verdict {
	if !plan.AllAtOnce {
		return verdicts
	}
	first := slices.IndexFunc(verdicts, func(v Verdict) bool { return v.Reason != "" })
	if first < 0 {
		return verdicts
	}
	why := fmt.Sprintf("plan is all at once and node %s was refused: %s", verdicts[first].NodeID, verdicts[first].Reason)
	for i := range verdicts {
		if verdicts[i].Reason == "" {
			verdicts[i].Reason = why
		}
	}
	return verdicts
}

// evaluateNode returns why the plan's part for nodeID does not fit, or "".
// Stops always fit; in-place updates need their allocations still live
// there (evaluateInPlace); placements need a ready node with room for its
// current allocations (less those the plan stops or replaces) plus the
// placements, and healthy devices for instances newly taken.
func evaluateNode(st State, plan *structs.Plan, nodeID string) (string, error) {
	placements, inplace := plan.NodeAllocation[nodeID], plan.NodeInPlaceUpdate[nodeID]
	if len(inplace) > 0 {
		if reason, err := evaluateInPlace(st, nodeID, inplace); err != nil || reason != "" {
			return reason, err
		}
	}
	if len(placements) == 0 {
		return "", nil
	}
	// The re-check below is for nodeID; an allocation naming another node
	// would be stored there, unchecked.
	for _, a := range placements {
		if a.NodeID != nodeID {
			return fmt.Sprintf("alloc %s names node %s", structs.ShortID(a.ID), a.NodeID), nil
		}
	}
	node, err := st.NodeByID(nil, nodeID)
	if err != nil {
		return "", err
	}
	switch {
	case node == nil:
		return "node does not exist", nil
	case !node.Ready():
		return fmt.Sprintf("node is not ready (status %s, eligibility %q, drain %t)",
			node.Status, node.SchedulingEligibility, node.Drain), nil
	}
	existing, err := st.AllocsByNode(nil, nodeID)
	if err != nil {
		return "", err
	}
	replaced := map[string]bool{}
	for _, a := range plan.NodeUpdate[nodeID] {
		replaced[a.ID] = true
	}
	for _, a := range placements {
		replaced[a.ID] = true
	}
	for _, a := range inplace {
		replaced[a.ID] = true
	}
	current := map[string]*structs.Allocation{}
	proposed := make([]*structs.Allocation, 0, len(existing)+len(placements))
	for _, a := range existing {
		current[a.ID] = a
		if !replaced[a.ID] && !a.TerminalStatus() {
			proposed = append(proposed, a)
		}
	}
	proposed = append(proposed, placements...)
	proposed = append(proposed, inplace...)
	if fit, dim := structs.AllocsFit(node, proposed); !fit {
		return "does not fit: " + dim, nil
	}
	for _, a := range placements {
		if problem := node.DeviceProblem(newlyTaken(current[a.ID], a)); problem != "" {
			return fmt.Sprintf("alloc %s: %s", structs.ShortID(a.ID), problem), nil
		}
	}
	return "", nil
}

// newlyTaken returns an allocation holding the device instances that
// next holds and prev (the version in state, or nil) did not: only those
// must be healthy, since an allocation may keep a GPU that failed under it.
func newlyTaken(prev, next *structs.Allocation) *structs.Allocation {
	if prev == nil || prev.TerminalStatus() {
		return next
	}
	had := map[string]bool{}
	for _, id := range prev.DeviceIDs() {
		had[id] = true
	}
	var fresh []string
	for _, id := range next.DeviceIDs() {
		if !had[id] {
			fresh = append(fresh, id)
		}
	}
	return &structs.Allocation{
		ID: next.ID,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"": {Devices: []*structs.AllocatedDeviceResource{{DeviceIDs: fresh}}},
		}},
	}
}
