package structs

// RPCNodeGetRendezvous returns the allocations of an allocation's group
// (its gang or distributed peers) to the node that runs it.
const RPCNodeGetRendezvous = "Node.GetRendezvous"

// RendezvousRequest asks for the peers of AllocID; the node proves
// itself with its secret and must run the allocation.
type RendezvousRequest struct {
	NodeID     string
	NodeSecret string
	AllocID    string
	QueryOptions
}

// RendezvousPeer is one allocation of the group, as much as a peer needs
// to reach it: its rank (name index) and its rendezvous port.
type RendezvousPeer struct {
	AllocID      string
	Index        int
	NodeID       string
	HostIP       string
	Port         int // the rendezvous port's host port; 0 when it has none
	ClientStatus string
	CreateIndex  uint64
}

// RendezvousResponse answers a RendezvousRequest: the group's
// allocations the servers want running, and the job's group count.
type RendezvousResponse struct {
	Peers []RendezvousPeer
	Count int
	QueryMeta
}

// RendezvousPeerOf is alloc as a peer.
func RendezvousPeerOf(alloc *Allocation) RendezvousPeer {
	p := RendezvousPeer{AllocID: alloc.ID, Index: alloc.Index(), NodeID: alloc.NodeID, ClientStatus: alloc.ClientStatus, CreateIndex: alloc.CreateIndex}
	if alloc.AllocatedResources != nil {
		for _, m := range alloc.AllocatedResources.Shared.Ports {
			if m.Label == RendezvousPortLabel {
				p.HostIP, p.Port = m.HostIP, m.Value
			}
		}
	}
	return p
}
