package scheduler

import (
	"github.com/droverhq/drover/server/scheduler/feasible"
	"github.com/droverhq/drover/structs"
)

// placeOnPrevious places a replacement of a group with a sticky
// ephemeral disk on its previous allocation's node, when that node is
// ready and the placement fits and is admitted there, so that the client
// can hand it the previous allocation's data. nil option: place as
// usual.
func (p *placer) placeOnPrevious(stack *feasible.Stack, pl placement) (*feasible.Option, *structs.AllocMetric, error) {
	if pl.previousNode == "" || pl.group.EphemeralDisk == nil || !pl.group.EphemeralDisk.Sticky {
		return nil, nil, nil
	}
	node, err := p.state.NodeByID(nil, pl.previousNode)
	if err != nil || node == nil || !node.Ready() {
		return nil, nil, err
	}
	option := stack.SelectOn(p, node, p.Usage(node))
	if option == nil {
		return nil, nil, nil
	}
	m := &structs.AllocMetric{NodesEvaluated: 1}
	option, err = stack.Admit(option, nil, m)
	return option, m, err
}
