package server

import (
	"context"
	"errors"
	"fmt"
	"net/rpc"
	"sort"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/droverhq/drover/structs"
)

// Timings of the calls a server makes to its peers about membership.
const (
	peerDialTimeout = 5 * time.Second
	peerCallTimeout = 10 * time.Second
)

// maybeBootstrap bootstraps Raft with every server of the region once
// BootstrapExpect of them are alive in serf and none of them has Raft
// state (as Nomad does). It runs on serf events and at most once per
// server; a server with Raft state never bootstraps. It reports whether
// it should be tried again (a peer could not be asked).
func (s *Server) maybeBootstrap() (retry bool) {
	if s.bootstrapped.Load() {
		return false
	}
	if s.raft.LastIndex() > 0 { // a leader added this server meanwhile
		s.bootstrapped.Store(true)
		return false
	}
	expect := s.config.BootstrapExpect
	var servers []serverMember
	for _, m := range s.serverMembers() {
		if m.Status != serf.StatusAlive {
			continue
		}
		if m.BootstrapExpect != 0 && m.BootstrapExpect != expect {
			s.logger.Error("server expects a different cluster size; give every server the same bootstrap_expect",
				"member", m.Name, "its_bootstrap_expect", m.BootstrapExpect, "bootstrap_expect", expect)
			return false
		}
		servers = append(servers, m)
	}
	if len(servers) < expect {
		return false
	}
	for _, m := range servers {
		if m.ID == string(s.raftID) {
			continue
		}
		var resp structs.RaftStateResponse
		if err := s.callPeer(m.RPCAddr, structs.RPCClusterRaftState, &structs.RaftStateRequest{}, &resp); err != nil {
			s.logger.Warn("ask server for its raft state before bootstrapping", "member", m.Name, "error", err)
			return true
		}
		if resp.HasState {
			s.logger.Info("server already has raft state: joining its cluster instead of bootstrapping", "member", m.Name)
			s.bootstrapped.Store(true)
			return false
		}
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	var conf raft.Configuration
	for _, m := range servers {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.RPCAddr),
		})
	}
	if err := s.raft.BootstrapCluster(conf).Error(); err != nil {
		if errors.Is(err, raft.ErrCantBootstrap) {
			s.bootstrapped.Store(true)
			return false
		}
		s.logger.Error("bootstrap raft", "error", err)
		return true
	}
	s.bootstrapped.Store(true)
	s.logger.Info("bootstrapped the cluster", "servers", len(conf.Servers))
	return false
}

// callPeer makes one RPC call to the server at addr on a connection of
// its own, which shutdown closes.
func (s *Server) callPeer(addr, method string, args, reply any) error {
	conn, err := s.dialRPC(addr, peerDialTimeout)
	if err != nil {
		return err
	}
	_ = conn.SetDeadline(time.Now().Add(peerCallTimeout))
	ctx, cancel := s.requestContext(peerCallTimeout)
	defer cancel()
	defer context.AfterFunc(ctx, func() { _ = conn.Close() })()
	if _, err := conn.Write([]byte{structs.RPCTypeRPC}); err != nil {
		_ = conn.Close()
		return fmt.Errorf("call %s at %s: %w", method, addr, err)
	}
	client := rpc.NewClientWithCodec(structs.NewRPCClientCodec(conn))
	defer client.Close()
	if err := client.Call(method, args, reply); err != nil {
		return fmt.Errorf("call %s at %s: %w", method, addr, err)
	}
	return nil
}

// reconcileMembers is a leader duty: it keeps the Raft configuration in
// step with the region's servers in serf, on every serf member event and
// every reconcile interval, until ctx ends.
func (s *Server) reconcileMembers(ctx context.Context) {
	down := deadClock{}
	ticker := time.NewTicker(s.config.reconcileInterval)
	defer ticker.Stop()
	for {
		s.reconcileOnce(down)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-s.reconcileCh:
		}
	}
}

// reconcileOnce applies one round of planMembership's changes.
func (s *Server) reconcileOnce(down deadClock) {
	future := s.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		s.logger.Warn("reconcile members: read raft configuration", "error", err)
		return
	}
	actions := planMembership(future.Configuration(), s.serverMembers(), s.raftID, down, time.Now(), s.config.DeadServerTimeout)
	for _, a := range actions {
		var f raft.IndexFuture
		if a.add {
			f = s.raft.AddVoter(a.id, a.addr, 0, raftApplyTimeout)
		} else {
			f = s.raft.RemoveServer(a.id, 0, raftApplyTimeout)
		}
		if err := f.Error(); err != nil {
			s.logger.Error("reconcile members", "add", a.add, "server_id", a.id, "addr", a.addr, "reason", a.reason, "error", err)
			return
		}
		if a.add {
			s.logger.Info("added server to raft", "server_id", a.id, "addr", a.addr, "reason", a.reason)
		} else {
			s.logger.Info("removed server from raft", "server_id", a.id, "addr", a.addr, "reason", a.reason)
		}
	}
}

// memberAction is one change the leader makes to the Raft configuration:
// add (or re-address) a voter, or remove a server.
type memberAction struct {
	add    bool
	id     raft.ServerID
	addr   raft.ServerAddress
	reason string
}

// deadClock remembers since when each Raft peer has been failed in serf or
// missing from it. The reconciliation owns it; a new leader starts a new
// one, so a dead server is never removed sooner than the timeout after a
// leadership change.
type deadClock map[raft.ServerID]time.Time

// planMembership compares the Raft configuration with the region's
// servers in serf and returns the changes to make, in order:
//   - an alive server missing from Raft, or at a new address, is added as a
//     voter (first removing a stale ID registered at its address, as after
//     its data directory was wiped);
//   - a server that left serf gracefully is removed;
//   - a server failed in serf, or missing from it, for timeout is removed,
//     but only while fewer than half the voters are down (with more the
//     leader could not commit the change anyway, and a partition heals
//     better with the configuration intact).
//
// It never removes self. down is updated with when each peer went down.
func planMembership(cfg raft.Configuration, members []serverMember, self raft.ServerID, down deadClock, now time.Time, timeout time.Duration) []memberAction {
	v := newMembershipView(cfg, members, self)
	actions := v.planJoins()
	actions = append(actions, v.planDepartures(down, now, timeout)...)
	for id := range down {
		if _, ok := v.inRaft[id]; !ok || v.removed[id] {
			delete(down, id)
		}
	}
	return actions
}

// membershipView indexes one round's Raft configuration and serf members
// for planMembership.
type membershipView struct {
	cfg     raft.Configuration
	self    raft.ServerID
	inRaft  map[raft.ServerID]raft.Server
	byAddr  map[raft.ServerAddress]raft.ServerID
	voters  int
	byID    map[raft.ServerID]serverMember // an alive member wins over others with its ID
	removed map[raft.ServerID]bool         // planned removals
}

func newMembershipView(cfg raft.Configuration, members []serverMember, self raft.ServerID) *membershipView {
	v := &membershipView{
		cfg: cfg, self: self,
		inRaft: map[raft.ServerID]raft.Server{}, byAddr: map[raft.ServerAddress]raft.ServerID{},
		byID: map[raft.ServerID]serverMember{}, removed: map[raft.ServerID]bool{},
	}
	for _, srv := range cfg.Servers {
		v.inRaft[srv.ID] = srv
		v.byAddr[srv.Address] = srv.ID
		if srv.Suffrage == raft.Voter {
			v.voters++
		}
	}
	for _, m := range members {
		id := raft.ServerID(m.ID)
		if prev, ok := v.byID[id]; !ok || prev.Status != serf.StatusAlive {
			v.byID[id] = m
		}
	}
	return v
}

// planJoins adds the alive servers missing from Raft or at a new address,
// in ID order.
func (v *membershipView) planJoins() []memberAction {
	ids := make([]raft.ServerID, 0, len(v.byID))
	for id := range v.byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var actions []memberAction
	for _, id := range ids {
		m := v.byID[id]
		addr := raft.ServerAddress(m.RPCAddr)
		if id == v.self || m.Status != serf.StatusAlive {
			continue
		}
		srv, known := v.inRaft[id]
		if known && srv.Address == addr {
			continue
		}
		reason := "joined"
		if known {
			reason = "address changed"
		}
		if other, ok := v.byAddr[addr]; ok && other != id && other != v.self && !v.removed[other] {
			actions = append(actions, memberAction{id: other, addr: addr, reason: "its address now belongs to " + m.Name})
			v.removed[other] = true
		}
		actions = append(actions, memberAction{add: true, id: id, addr: addr, reason: reason})
	}
	return actions
}

// planDepartures removes the servers that left, and those down for
// timeout while fewer than half the voters are down; down records when
// each went down.
func (v *membershipView) planDepartures(down deadClock, now time.Time, timeout time.Duration) []memberAction {
	var actions []memberAction
	var dead []raft.Server
	for _, srv := range v.cfg.Servers {
		if srv.ID == v.self || v.removed[srv.ID] {
			continue
		}
		m, known := v.byID[srv.ID]
		switch {
		case known && (m.Status == serf.StatusAlive || m.Status == serf.StatusLeaving):
			delete(down, srv.ID)
		case known && m.Status == serf.StatusLeft:
			actions = append(actions, memberAction{id: srv.ID, addr: srv.Address, reason: "left the cluster"})
			v.removed[srv.ID] = true
		default: // failed, or unknown to serf
			if _, ok := down[srv.ID]; !ok {
				down[srv.ID] = now
			}
			dead = append(dead, srv)
		}
	}
	if len(dead)*2 >= v.voters {
		return actions
	}
	for _, srv := range dead {
		if since := down[srv.ID]; now.Sub(since) >= timeout {
			actions = append(actions, memberAction{id: srv.ID, addr: srv.Address,
				reason: fmt.Sprintf("down for %s (dead server timeout %s)", now.Sub(since).Round(time.Second), timeout)})
			v.removed[srv.ID] = true
		}
	}
	return actions
}
