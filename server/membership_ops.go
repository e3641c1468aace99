package server

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/droverhq/drover/structs"
)

// leaveRaftWait bounds how long a leaving follower waits for the leader
// to take it out of the Raft configuration.
const leaveRaftWait = 5 * time.Second

// raftProtocol is the Raft protocol version the servers speak, as Nomad
// reports it.
const raftProtocol = "3"

// Leave leaves the cluster gracefully; call Shutdown after it. A leader
// first removes itself from Raft (another server takes over), then serf
// announces the leave, and a follower waits, up to leaveRaftWait, for the
// leader to remove it. A lone server just leaves serf.
func (s *Server) Leave() error {
	s.logger.Info("leaving the cluster")
	future := s.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		return fmt.Errorf("leave: read raft configuration: %w", err)
	}
	voters, inConfig := 0, false
	for _, srv := range future.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			voters++
		}
		inConfig = inConfig || srv.ID == s.raftID
	}
	removedSelf := false
	if s.IsLeader() && inConfig && voters > 1 {
		if err := s.raft.RemoveServer(s.raftID, 0, raftApplyTimeout).Error(); err != nil {
			s.logger.Warn("leave: remove self from raft", "error", err)
		} else {
			removedSelf = true
		}
	}
	if err := s.serf.Leave(); err != nil {
		return fmt.Errorf("leave serf: %w", err)
	}
	if removedSelf || !inConfig || voters <= 1 {
		return nil
	}
	deadline := time.Now().Add(leaveRaftWait)
	for time.Now().Before(deadline) {
		if !s.inRaftConfig() {
			return nil
		}
		select {
		case <-s.shutdownCh:
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.logger.Warn("leave: the leader did not remove this server from raft in time", "waited", leaveRaftWait)
	return nil
}

// inRaftConfig reports whether this server is in its latest Raft
// configuration.
func (s *Server) inRaftConfig() bool {
	future := s.raft.GetConfiguration()
	if future.Error() != nil {
		return true
	}
	for _, srv := range future.Configuration().Servers {
		if srv.ID == s.raftID {
			return true
		}
	}
	return false
}

// Members lists the serf pool as this server sees it, sorted by name.
func (s *Server) Members() *structs.ServerMembersResponse {
	out := &structs.ServerMembersResponse{
		ServerName: s.config.NodeName, ServerRegion: s.config.Region, ServerDC: s.config.Datacenter,
		Members: []*structs.ServerMember{},
	}
	for _, m := range s.serf.Members() {
		tags := make(map[string]string, len(m.Tags))
		for k, v := range m.Tags {
			tags[k] = v
		}
		out.Members = append(out.Members, &structs.ServerMember{
			Name: m.Name, Addr: m.Addr.String(), Port: m.Port, Tags: tags, Status: m.Status.String(),
			ProtocolMin: m.ProtocolMin, ProtocolMax: m.ProtocolMax, ProtocolCur: m.ProtocolCur,
			DelegateMin: m.DelegateMin, DelegateMax: m.DelegateMax, DelegateCur: m.DelegateCur,
		})
	}
	sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].Name < out.Members[j].Name })
	return out
}

// ForceLeave marks a failed server as left, so that the leader removes it
// from Raft at once instead of after the dead server timeout; prune also
// forgets it in serf. node is its member name ("name.region") or its
// name in this server's region.
func (s *Server) ForceLeave(node string, prune bool) error {
	if node == "" {
		return fmt.Errorf("force-leave: missing node name: %w", structs.ErrInvalid)
	}
	var member *serf.Member
	for _, m := range s.serf.Members() {
		if m.Name == node || m.Name == node+"."+s.config.Region {
			member = &m
			break
		}
	}
	if member == nil {
		return fmt.Errorf("force-leave %q: no such server in the pool: %w", node, structs.ErrNotFound)
	}
	if member.Status == serf.StatusAlive {
		return fmt.Errorf("force-leave %q: the server is alive; force-leave removes failed servers only (stop it first, or use `drover operator raft remove-peer`): %w", member.Name, structs.ErrInvalid)
	}
	remove := s.serf.RemoveFailedNode
	if prune {
		remove = s.serf.RemoveFailedNodePrune
	}
	if err := remove(member.Name); err != nil {
		return fmt.Errorf("force-leave %q: %w", member.Name, err)
	}
	s.wakeReconcile()
	return nil
}

// RaftConfiguration returns the latest Raft configuration with each
// server's serf name and the leader marked, and the last Raft log index.
func (s *Server) RaftConfiguration() (*structs.RaftConfigurationResponse, error) {
	future := s.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		return nil, fmt.Errorf("read raft configuration: %w", err)
	}
	names := map[string]string{}
	for _, m := range s.serverMembers() {
		names[m.ID] = m.Name
	}
	_, leaderID := s.raft.LeaderWithID()
	// Raft (v1.7) no longer tells the configuration's own index: answer
	// the last log index, which the latest configuration is not past.
	out := &structs.RaftConfigurationResponse{Index: s.raft.LastIndex(), Servers: []*structs.RaftServer{}}
	for _, srv := range future.Configuration().Servers {
		out.Servers = append(out.Servers, &structs.RaftServer{
			ID: string(srv.ID), Node: names[string(srv.ID)], Address: string(srv.Address),
			Leader: leaderID != "" && srv.ID == leaderID, Voter: srv.Suffrage == raft.Voter,
			RaftProtocol: raftProtocol,
		})
	}
	return out, nil
}

// RemoveRaftPeer removes the server with id, or else the one at addr,
// from the Raft configuration. Only the leader changes the
// configuration: elsewhere it fails with structs.ErrNotLeader. A server
// that is still alive in serf is added back by the leader's
// reconciliation; remove-peer is for servers that are gone.
func (s *Server) RemoveRaftPeer(id, addr string) error {
	if id == "" && addr == "" {
		return fmt.Errorf("remove raft peer: give a peer ID or address: %w", structs.ErrInvalid)
	}
	if !s.IsLeader() {
		return fmt.Errorf("remove raft peer: %w: Raft configuration changes are made on the leader (%s)", structs.ErrNotLeader, s.Leader())
	}
	future := s.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		return fmt.Errorf("remove raft peer: read raft configuration: %w", err)
	}
	var target *raft.Server
	for _, srv := range future.Configuration().Servers {
		if (id != "" && string(srv.ID) == id) || (id == "" && string(srv.Address) == addr) {
			target = &srv
			break
		}
	}
	if target == nil {
		which := "id " + id
		if id == "" {
			which = "address " + addr
		}
		return fmt.Errorf("remove raft peer: no peer with %s: %w", which, structs.ErrNotFound)
	}
	if err := s.raft.RemoveServer(target.ID, 0, raftApplyTimeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("remove raft peer %s: %w (%v)", target.ID, structs.ErrNotLeader, err)
		}
		return fmt.Errorf("remove raft peer %s: %w", target.ID, err)
	}
	s.logger.Info("removed raft peer on request", "server_id", target.ID, "addr", target.Address)
	return nil
}

// raftState says whether this server has Raft state, for a peer that is
// about to bootstrap.
func (s *Server) raftState() *structs.RaftStateResponse {
	last := s.raft.LastIndex()
	return &structs.RaftStateResponse{ID: string(s.raftID), HasState: last > 0, LastIndex: last}
}
