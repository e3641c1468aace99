package structs

// RPC methods of the Cluster endpoint: server membership and the Raft
// configuration.
const (
	// RPCClusterRaftState asks one server whether it has Raft state; a
	// bootstrapping server asks every peer before it bootstraps.
	RPCClusterRaftState = "Cluster.RaftState"
	// RPCClusterRaftConfiguration reads the Raft configuration.
	RPCClusterRaftConfiguration = "Cluster.RaftConfiguration"
	// RPCClusterRemoveRaftPeer removes a server from the Raft
	// configuration (leader only).
	RPCClusterRemoveRaftPeer = "Cluster.RemoveRaftPeer"
)

// RaftStateRequest asks a server about its own Raft state. It is never
// forwarded: the question is for the server asked.
type RaftStateRequest struct{}

// RaftStateResponse says whether a server has Raft state, i.e. whether it
// is (or was) part of a bootstrapped cluster.
type RaftStateResponse struct {
	ID        string
	HasState  bool
	LastIndex uint64
}

// RaftConfigurationRequest reads the Raft configuration.
type RaftConfigurationRequest struct {
	QueryOptions
}

// RaftServer is one server of the Raft configuration, in Nomad's shape.
type RaftServer struct {
	ID           string
	Node         string // the server's serf member name, "" if unknown
	Address      string // the RPC (and Raft) address
	Leader       bool
	Voter        bool
	RaftProtocol string
}

// RaftConfigurationResponse is the Raft configuration and the answering
// server's last Raft log index when it was read (Nomad's
// /v1/operator/raft/configuration shape).
type RaftConfigurationResponse struct {
	Servers []*RaftServer
	Index   uint64
}

// RaftPeerRemoveRequest removes the Raft peer with ID, or else the one at
// Address.
type RaftPeerRemoveRequest struct {
	ID      string
	Address string
	WriteRequest
}

// ServerMember is a server in the serf LAN pool, in Nomad's
// /v1/agent/members shape.
type ServerMember struct {
	Name        string
	Addr        string
	Port        uint16
	Tags        map[string]string
	Status      string // alive, leaving, left, failed
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
	DelegateMin uint8
	DelegateMax uint8
	DelegateCur uint8
}

// ServerMembersResponse lists the serf pool as one server sees it.
type ServerMembersResponse struct {
	ServerName   string
	ServerRegion string
	ServerDC     string
	Members      []*ServerMember
}
