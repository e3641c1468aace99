package server

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// GetRendezvous returns the peers of an allocation of a gang or
// distributed group: the group's allocations the servers want running,
// with their rendezvous ports. Only the node that runs the allocation
// may ask (its secret), so a node learns the placement of no job it
// does not run.
func (e *nodeEndpoint) GetRendezvous(args *structs.RendezvousRequest, reply *structs.RendezvousResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeGetRendezvous, &err)
	if done, err := s.forward(structs.RPCNodeGetRendezvous, args, reply); done {
		return err
	}
	alloc, err := s.authorizeNodeAlloc(structs.RPCNodeGetRendezvous, args.NodeID, args.NodeSecret, args.AllocID)
	if err != nil {
		return err
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil || !tg.Rendezvous() {
		return fmt.Errorf("%w: group %q of allocation %s is neither a gang nor distributed", structs.ErrPermissionDenied, alloc.TaskGroup, alloc.ID)
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByJob(ws, alloc.Namespace, alloc.JobID)
		if err != nil {
			return 0, err
		}
		reply.Count = tg.Count
		if job, err := st.JobByID(ws, alloc.Namespace, alloc.JobID); err == nil && job != nil {
			if cur := job.LookupTaskGroup(alloc.TaskGroup); cur != nil {
				reply.Count = cur.Count
			}
		}
		reply.Peers = reply.Peers[:0]
		for _, a := range allocs {
			if a.TaskGroup == alloc.TaskGroup && a.DesiredStatus == structs.AllocDesiredStatusRun {
				reply.Peers = append(reply.Peers, structs.RendezvousPeerOf(a))
			}
		}
		return st.Index(state.TableAllocs)
	})
}

// authorizeNodeAlloc checks a node's call about one of its allocations:
// the node's secret, and that the allocation is on it.
func (s *Server) authorizeNodeAlloc(method, nodeID, secret, allocID string) (*structs.Allocation, error) {
	if nodeID == "" || secret == "" {
		return nil, fmt.Errorf("%w: %s: missing node ID or secret", structs.ErrPermissionDenied, method)
	}
	if err := s.authorizeNode(method, nodeID, secret); err != nil {
		return nil, err
	}
	alloc, err := s.State().AllocByID(nil, allocID)
	if err != nil {
		return nil, err
	}
	if alloc == nil || alloc.NodeID != nodeID || alloc.Job == nil {
		s.logger.Warn("node call refused: allocation not on the node", "method", method, "node_id", nodeID, "alloc_id", allocID)
		return nil, fmt.Errorf("%w: allocation %s is not on node %s", structs.ErrPermissionDenied, allocID, nodeID)
	}
	return alloc, nil
}
