package server

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// queueEndpoint serves the "Queue" RPC methods.
type queueEndpoint struct{ srv *Server }

// queueTables are the tables a queue's status follows: the queues, and
// what its usage derives from.
var queueTables = []string{state.TableJobs, state.TableEvals, state.TableAllocs, state.TableNodes}

// Upsert creates or replaces a queue (a weight of 0 is the default, 1).
// An invalid queue is refused (ErrInvalid) before anything is written; a
// stored one retries the blocked evaluations (the FSM reports a capacity
// change).
func (e *queueEndpoint) Upsert(args *structs.QueueUpsertRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCQueueUpsert, &err)
	if done, err := s.forward(structs.RPCQueueUpsert, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowOperatorWrite); err != nil {
		return err
	}
	if err := args.Queue.CheckShape(); err != nil {
		return fmt.Errorf("upsert queue: %w", err)
	}
	req := &structs.QueueUpsertRequest{Queue: args.Queue.Copy(), WriteRequest: args.WriteRequest}
	req.Queue.Canonicalize()
	if err := req.Queue.Validate(); err != nil {
		return err
	}
	if err := s.dryRun(func(tx *state.Txn) error { return tx.UpsertQueue(req.Queue) }); err != nil {
		return err
	}
	index, err := s.raftApply(structs.QueueUpsertRequestType, req)
	if err != nil {
		return fmt.Errorf("upsert queue %q: %w", req.Queue.Name, err)
	}
	reply.Index = index
	return nil
}

// Delete removes a queue. The default queue, one that jobs name and an
// unknown one are refused.
func (e *queueEndpoint) Delete(args *structs.QueueDeleteRequest, reply *structs.GenericResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCQueueDelete, &err)
	if done, err := s.forward(structs.RPCQueueDelete, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowOperatorWrite); err != nil {
		return err
	}
	if args.Name == "" {
		return fmt.Errorf("delete queue: missing name: %w", structs.ErrInvalid)
	}
	if err := s.dryRun(func(tx *state.Txn) error { return tx.DeleteQueue(args.Name) }); err != nil {
		return err
	}
	index, err := s.raftApply(structs.QueueDeleteRequestType, args)
	if err != nil {
		return fmt.Errorf("delete queue %q: %w", args.Name, err)
	}
	reply.Index = index
	return nil
}

// Get returns one queue with its usage and fair share (nil when there is
// none of that name), blocking on the queues and what their usage
// derives from.
func (e *queueEndpoint) Get(args *structs.QueueSpecificRequest, reply *structs.SingleQueueResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCQueueGet, &err)
	if done, err := s.forward(structs.RPCQueueGet, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, func(a *acl.ACL) bool {
		return a.AllowNamespaceOperation("*", acl.CapListJobs) && a.AllowQueue(args.Name, false)
	}); err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableQueues, func(ws memdb.WatchSet, st *state.StateStore) error {
		q, err := st.QueueStatus(ws, args.Name)
		reply.Queue = copyQueueStatus(q)
		return err
	}, queueTables...)
}

// List returns the queues whose name starts with Prefix, sorted, each
// with its usage and fair share.
func (e *queueEndpoint) List(args *structs.QueueListRequest, reply *structs.QueueListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCQueueList, &err)
	if done, err := s.forward(structs.RPCQueueList, args, reply); done {
		return err
	}
	a, err := s.anyNS(args.AuthToken, acl.CapListJobs)
	if err != nil {
		return err
	}
	return s.blockingTableRead(args.QueryOptions, &reply.QueryMeta, state.TableQueues, func(ws memdb.WatchSet, st *state.StateStore) error {
		qs, err := st.QueueStatuses(ws, args.Prefix)
		reply.Queues = nil
		for _, q := range qs {
			if a.AllowQueue(q.Queue.Name, false) {
				reply.Queues = append(reply.Queues, copyQueueStatus(q))
			}
		}
		return err
	}, queueTables...)
}

// copyQueueStatus copies a status, whose Queue is the stored object.
func copyQueueStatus(st *structs.QueueStatus) *structs.QueueStatus {
	if st == nil {
		return nil
	}
	c := *st
	c.Queue = st.Queue.Copy()
	return &c
}

// checkQueue refuses (ErrInvalid) a job naming a queue that does not
// exist ("" is the default queue, which always does).
func (s *Server) checkQueue(name string) error {
	q, err := s.State().QueueByName(nil, structs.QueueName(name))
	if err != nil {
		return fmt.Errorf("read queue %q: %w", name, err)
	}
	if q == nil {
		return fmt.Errorf("queue %q does not exist (create it with `drover queue apply %s`): %w", name, name, structs.ErrInvalid)
	}
	return nil
}
