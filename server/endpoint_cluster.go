package server

import (
	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// clusterEndpoint serves the "Cluster" RPC methods: server membership and
// the Raft configuration.
type clusterEndpoint struct{ srv *Server }

// RaftState answers whether this server has Raft state; a server about to
// bootstrap asks every peer first. It is never forwarded: there is no
// leader yet, and the question is for this server.
func (e *clusterEndpoint) RaftState(args *structs.RaftStateRequest, reply *structs.RaftStateResponse) error {
	*reply = *e.srv.raftState()
	return nil
}

// RaftConfiguration returns the Raft configuration: the leader's, or with
// AllowStale this server's.
func (e *clusterEndpoint) RaftConfiguration(args *structs.RaftConfigurationRequest, reply *structs.RaftConfigurationResponse) error {
	if done, err := e.srv.forward(structs.RPCClusterRaftConfiguration, args, reply); done {
		return err
	}
	if _, err := e.srv.authorize(args.AuthToken, (*acl.ACL).AllowOperatorRead); err != nil {
		return err
	}
	out, err := e.srv.RaftConfiguration()
	if err != nil {
		return err
	}
	*reply = *out
	return nil
}

// RemoveRaftPeer removes a server from the Raft configuration; a
// follower forwards it to the leader.
func (e *clusterEndpoint) RemoveRaftPeer(args *structs.RaftPeerRemoveRequest, reply *structs.GenericResponse) error {
	if done, err := e.srv.forward(structs.RPCClusterRemoveRaftPeer, args, reply); done {
		return err
	}
	if err := e.srv.requireManagement(args.AuthToken); err != nil {
		return err
	}
	if err := e.srv.RemoveRaftPeer(args.ID, args.Address); err != nil {
		return err
	}
	reply.Index = e.srv.raft.LastIndex()
	return nil
}
