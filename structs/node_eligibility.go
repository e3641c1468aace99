package structs

// Node scheduling eligibility, set by operators (Nomad's
// `node eligibility -enable|-disable`): an ineligible node keeps its
// allocations but gets no new ones (Node.Ready).

// NodeUpdateEligibilityRequestType sets one node's scheduling
// eligibility.
const NodeUpdateEligibilityRequestType MessageType = 125

// RPCNodeUpdateEligibility is the RPC method that sets a node's
// eligibility.
const RPCNodeUpdateEligibility = "Node.UpdateEligibility"

// NodeUpdateEligibilityRequest is Nomad's: NodeID and Eligibility
// ("eligible" or "ineligible"). As a Raft entry it also carries when it
// was made and the evaluations a newly eligible node brings.
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
	UpdatedAt   int64
	Evals       []*Evaluation
	WriteRequest
}

// NodeEligibilityUpdateResponse is Nomad's answer to an eligibility
// change.
type NodeEligibilityUpdateResponse struct {
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	Index           uint64
}

// ValidEligibility reports whether e is a scheduling eligibility.
func ValidEligibility(e string) bool {
	return e == NodeSchedulingEligible || e == NodeSchedulingIneligible
}
