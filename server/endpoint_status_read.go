package server

import "github.com/droverhq/drover/structs"

// Status.Leader, Status.Peers and Status.Regions answer from the server
// asked, never the leader: they report its own view, as Nomad's do.

// Leader returns the leader's RPC address as this server knows it, or ""
// when it knows none.
func (e *statusEndpoint) Leader(args *structs.GenericRequest, reply *string) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCStatusLeader, &err)
	*reply = s.Leader()
	return nil
}

// Peers returns the RPC addresses of the servers in this server's Raft
// configuration ([] when it cannot read it).
func (e *statusEndpoint) Peers(args *structs.GenericRequest, reply *[]string) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCStatusPeers, &err)
	*reply = nonNil(s.Peers())
	return nil
}

// Regions returns the regions this server knows: its own.
func (e *statusEndpoint) Regions(args *structs.GenericRequest, reply *[]string) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCStatusRegions, &err)
	*reply = []string{s.config.Region}
	return nil
}
