package server

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// UpdateEligibility sets a node's scheduling eligibility (node:write).
// An ineligible node keeps its allocations and gets no new ones; a node
// made eligible again brings evaluations for the system jobs that place
// on it, and wakes blocked evaluations.
func (e *nodeEndpoint) UpdateEligibility(args *structs.NodeUpdateEligibilityRequest, reply *structs.NodeEligibilityUpdateResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeUpdateEligibility, &err)
	if done, err := s.forward(structs.RPCNodeUpdateEligibility, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowNodeWrite); err != nil {
		return err
	}
	if args.NodeID == "" {
		return errMissing(structs.RPCNodeUpdateEligibility, "node ID")
	}
	if !structs.ValidEligibility(args.Eligibility) {
		return structs.KindErrorf(structs.ErrInvalid, "eligibility %q: want %q or %q",
			args.Eligibility, structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible)
	}
	s.heartbeats.statusMu.Lock()
	defer s.heartbeats.statusMu.Unlock()
	node, err := s.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return fmt.Errorf("node %s eligibility: %w", args.NodeID, err)
	}
	if node == nil {
		return fmt.Errorf("node %s: %w", args.NodeID, structs.ErrUnknownNode)
	}
	req := &structs.NodeUpdateEligibilityRequest{
		NodeID: node.ID, Eligibility: args.Eligibility, UpdatedAt: time.Now().UnixNano(), WriteRequest: args.WriteRequest,
	}
	if args.Eligibility == structs.NodeSchedulingEligible && node.SchedulingEligibility != structs.NodeSchedulingEligible &&
		node.Status == structs.NodeStatusReady {
		if req.Evals, err = s.nodeReadyEvals(node.ID); err != nil {
			return fmt.Errorf("node %s eligibility: %w", node.ID, err)
		}
	}
	index, err := s.raftApply(structs.NodeUpdateEligibilityRequestType, req)
	if err != nil {
		return fmt.Errorf("node %s eligibility: %w", node.ID, err)
	}
	for _, ev := range req.Evals {
		reply.EvalIDs = append(reply.EvalIDs, ev.ID)
	}
	if len(req.Evals) > 0 {
		reply.EvalCreateIndex = index
	}
	reply.NodeModifyIndex, reply.Index = index, index
	return nil
}
