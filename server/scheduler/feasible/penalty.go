package feasible

// penaltyWeight is the weight of the reschedule penalty in a node's score:
// enough to outweigh the usual bin-packing difference between two nodes,
// so a replacement leaves the node its predecessor failed on unless no
// other fits.
const penaltyWeight = 2

// ReschedulePenaltyRank scores -1 the nodes where an earlier allocation
// of the placement's name failed, 0 the others: a replacement tries
// another node first (Nomad's node reschedule penalty). The scheduler
// sets the nodes before each placement (Stack.Penalize).
type ReschedulePenaltyRank struct {
	nodes map[string]bool
}

// Name implements Ranker.
func (*ReschedulePenaltyRank) Name() string { return "node-reschedule-penalty" }

// Score implements Ranker.
func (r *ReschedulePenaltyRank) Score(c *Candidate) float64 {
	if r.nodes[c.Node.ID] {
		return -1
	}
	return 0
}

// Penalize sets the nodes the next placement's predecessors failed on
// (none: nil).
func (s *Stack) Penalize(nodeIDs []string) {
	s.penalty.nodes = nil
	for _, id := range nodeIDs {
		if s.penalty.nodes == nil {
			s.penalty.nodes = map[string]bool{}
		}
		s.penalty.nodes[id] = true
	}
}
