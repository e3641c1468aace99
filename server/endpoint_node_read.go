package server

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// The users' reads of nodes. A node's SecretID authenticates its client:
// it is never in their answers (NodeListStub has none; GetNode blanks
// it).

// List returns the stubs of the nodes whose ID starts with Prefix,
// sorted by ID; its index is the nodes' table's.
func (e *nodeEndpoint) List(args *structs.NodeListRequest, reply *structs.NodeListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeList, &err)
	if done, err := s.forward(structs.RPCNodeList, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowNodeRead); err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		nodes, err := st.NodesByIDPrefix(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Nodes = make([]*structs.NodeListStub, 0, len(nodes))
		for _, n := range nodes {
			reply.Nodes = append(reply.Nodes, n.Stub())
		}
		return st.Index(state.TableNodes)
	})
}

// GetNode returns the node with ID NodeID, else the only one whose ID
// starts with it (structs.ErrNotFound for none, structs.ErrInvalid for
// several), without its SecretID; its index is the node's ModifyIndex.
func (e *nodeEndpoint) GetNode(args *structs.NodeSpecificRequest, reply *structs.SingleNodeResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeGetNode, &err)
	if done, err := s.forward(structs.RPCNodeGetNode, args, reply); done {
		return err
	}
	if _, err := s.authorize(args.AuthToken, (*acl.ACL).AllowNodeRead); err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		n, err := resolveNode(ws, st, args.NodeID)
		if err != nil {
			return 0, err
		}
		reply.Node = n.Copy()
		reply.Node.SecretID = ""
		return n.ModifyIndex, nil
	})
}

// GetNodeAllocs returns every allocation of the node (by ID or unique
// prefix, as GetNode), terminal ones included; its index is the
// allocations' table's. It is the users' read: clients watch theirs
// with GetAllocs, which takes the full ID only.
func (e *nodeEndpoint) GetNodeAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeAllocsResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeGetNodeAllocs, &err)
	if done, err := s.forward(structs.RPCNodeGetNodeAllocs, args, reply); done {
		return err
	}
	a, err := s.authorize(args.AuthToken, (*acl.ACL).AllowNodeRead)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		n, err := resolveNode(ws, st, args.NodeID)
		if err != nil {
			return 0, err
		}
		allocs, err := st.AllocsByNode(ws, n.ID)
		if err != nil {
			return 0, err
		}
		reply.Allocs = nonNil(keepAllocs(allocs, func(ns string) bool { return a.AllowNamespaceOperation(ns, acl.CapReadJob) }))
		return st.Index(state.TableAllocs)
	})
}
