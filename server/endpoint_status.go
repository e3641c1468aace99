package server

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// statusEndpoint serves the "Status" RPC methods.
type statusEndpoint struct{ srv *Server }

// Ping answers so a client can check the connection.
func (e *statusEndpoint) Ping(args *struct{}, reply *struct{}) error { return nil }

// ReadIndex answers, on the leader, the index a consistent read must
// wait for (Server.ReadBarrier): the leader first confirms with a quorum
// that it still leads, so that a deposed leader cannot answer an old
// index.
func (e *statusEndpoint) ReadIndex(args *structs.ReadIndexRequest, reply *structs.ReadIndexResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCStatusReadIndex, &err)
	if done, err := s.forward(structs.RPCStatusReadIndex, args, reply); done {
		return err
	}
	if err := s.raft.VerifyLeader().Error(); err != nil {
		return fmt.Errorf("read index: %w (%v)", structs.ErrNotLeader, err)
	}
	if reply.Index, err = s.State().LatestIndex(); err != nil {
		return fmt.Errorf("read index: %w", err)
	}
	s.setQueryMeta(&reply.QueryMeta)
	return nil
}
