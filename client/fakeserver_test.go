package client

import (
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/structs"
)

// fakeServer is the smallest honest stand-in for a Drover server's Node
// endpoints: it speaks the real wire (a yamux session whose streams carry msgpack net/rpc),
// keeps nodes and allocations in maps under one index, answers
// Node.GetAllocs as a blocking query, and records what clients send. It
// schedules nothing: tests place allocations with putAlloc.
type fakeServer struct {
	t   *testing.T
	ln  net.Listener
	ttl time.Duration

	mu         sync.Mutex
	index      uint64
	changed    chan struct{} // closed and replaced on every write
	nodes      map[string]*structs.Node
	registers  int
	heartbeats int
	allocs     map[string]*structs.Allocation
	updates    []*structs.Allocation
	conns      []net.Conn
	closed     bool
	// updateCalls counts Node.UpdateAlloc calls; while refuseUpdates is
	// set they fail with a server error, and the next breakUpdates of
	// them break every connection instead of answering.
	updateCalls   int
	refuseUpdates bool
	breakUpdates  int
	// follower makes every call answer "not the leader"; leaderless
	// makes every call answer "no cluster leader" (a server cut off).
	follower, leaderless bool
	// servers is what Register and UpdateStatus answer in Servers.
	servers []string
	// getAllocsCalls counts Node.GetAllocs answers.
	getAllocsCalls int
	// serviceUpserts counts ServiceRegistration.Upsert calls per alloc.
	serviceUpserts map[string]int
	// purged are the jobs ("<ns>/<job>") Node.JobsExist says are gone.
	purged map[string]bool
}

// rewind makes the server look like one whose state lags behind: its
// index goes back and the given allocations are unknown to it. Blocked
// queries are not woken: they answer the old view when their wait ends.
func (s *fakeServer) rewind(index uint64, forget ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index = index
	for _, id := range forget {
		delete(s.allocs, id)
	}
}

// refusal is the error a follower or leaderless server answers, or nil.
func (s *fakeServer) refusal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.follower:
		return structs.ErrNotLeader
	case s.leaderless:
		return fmt.Errorf("forward: %w", structs.ErrNoLeader)
	}
	return nil
}

func newFakeServer(t *testing.T, ttl time.Duration) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{
		t: t, ln: ln, ttl: ttl, index: 1,
		changed: make(chan struct{}),
		nodes:   map[string]*structs.Node{},
		allocs:  map[string]*structs.Allocation{},
	}
	srv := rpc.NewServer()
	if err := srv.RegisterName("Node", &fakeNodeEndpoint{s: s}); err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterName("ServiceRegistration", &fakeServiceEndpoint{s: s}); err != nil { // fakeservices_test.go
		t.Fatal(err)
	}
	go s.serve(srv)
	t.Cleanup(s.close)
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

func (s *fakeServer) serve(srv *rpc.Server) {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, conn)
		s.mu.Unlock()
		go func() {
			b := make([]byte, 1)
			if _, err := conn.Read(b); err != nil || b[0] != structs.RPCTypeNodeMultiplex {
				conn.Close()
				return
			}
			sess, err := yamux.Server(conn, nil)
			if err != nil {
				conn.Close()
				return
			}
			for {
				stream, err := sess.Accept()
				if err != nil {
					return
				}
				go func() {
					if _, err := stream.Read(b[:1]); err != nil || b[0] != structs.StreamTypeRPC {
						stream.Close()
						return
					}
					srv.ServeCodec(structs.NewRPCServerCodec(stream))
				}()
			}
		}()
	}
}

func (s *fakeServer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.ln.Close()
	for _, c := range s.conns {
		c.Close()
	}
	s.bumpLocked()
}

// bumpLocked advances the index and wakes blocked queries.
func (s *fakeServer) bumpLocked() uint64 {
	s.index++
	close(s.changed)
	s.changed = make(chan struct{})
	return s.index
}

// putAlloc places or updates an allocation as the scheduler would.
func (s *fakeServer) putAlloc(a *structs.Allocation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a = a.Copy()
	idx := s.bumpLocked()
	if old := s.allocs[a.ID]; old != nil {
		a.ClientStatus, a.ClientDescription, a.TaskStates = old.ClientStatus, old.ClientDescription, old.TaskStates
	} else {
		a.CreateIndex = idx
	}
	a.ModifyIndex, a.AllocModifyIndex = idx, idx
	s.allocs[a.ID] = a
}

// set changes the server's state under its lock.
func (s *fakeServer) set(fn func(s *fakeServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

func (s *fakeServer) forgetNode(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.nodes, id)
}

func (s *fakeServer) node(id string) *structs.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[id].Copy()
}

func (s *fakeServer) counts() (registers, heartbeats int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registers, s.heartbeats
}

func (s *fakeServer) alloc(id string) *structs.Allocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allocs[id].Copy()
}

func (s *fakeServer) updatesFor(id string) []*structs.Allocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*structs.Allocation
	for _, u := range s.updates {
		if u.ID == id {
			out = append(out, u)
		}
	}
	return out
}

// fakeNodeEndpoint is the "Node" RPC service.
type fakeNodeEndpoint struct{ s *fakeServer }

func (e *fakeNodeEndpoint) JobsExist(args *structs.NodeJobsExistRequest, reply *structs.NodeJobsExistResponse) error {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	for _, j := range args.Jobs {
		reply.Exists = append(reply.Exists, !e.s.purged[j.Namespace+"/"+j.JobID])
	}
	return nil
}

func (e *fakeNodeEndpoint) Register(args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) error {
	if err := e.s.refusal(); err != nil {
		return wire(err)
	}
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if args.Node == nil || args.Node.ID == "" {
		return wire(fmt.Errorf("register: missing node: %w", structs.ErrInvalid))
	}
	n := args.Node.Copy()
	n.Status = structs.NodeStatusReady
	s.nodes[n.ID] = n
	s.registers++
	reply.HeartbeatTTL = s.ttl
	reply.Servers = s.servers
	reply.Index = s.bumpLocked()
	return nil
}

func (e *fakeNodeEndpoint) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	if err := e.s.refusal(); err != nil {
		return wire(err)
	}
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nodes[args.NodeID] == nil {
		return wire(fmt.Errorf("node %s: %w", args.NodeID, structs.ErrUnknownNode))
	}
	s.heartbeats++
	reply.HeartbeatTTL = s.ttl
	reply.Servers = s.servers
	reply.Index = s.index
	return nil
}

func (e *fakeNodeEndpoint) GetAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeAllocsResponse) error {
	if err := e.s.refusal(); err != nil {
		return wire(err)
	}
	s := e.s
	deadline := time.After(min(args.MaxQueryTime, 5*time.Minute))
	for {
		s.mu.Lock()
		if s.index > args.MinQueryIndex || s.closed {
			for _, a := range s.allocs {
				if a.NodeID == args.NodeID {
					reply.Allocs = append(reply.Allocs, a.Copy())
				}
			}
			reply.Index = s.index
			s.getAllocsCalls++
			s.mu.Unlock()
			return nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			s.mu.Lock()
			for _, a := range s.allocs {
				if a.NodeID == args.NodeID {
					reply.Allocs = append(reply.Allocs, a.Copy())
				}
			}
			reply.Index = s.index
			s.getAllocsCalls++
			s.mu.Unlock()
			return nil
		}
	}
}

func (e *fakeNodeEndpoint) UpdateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	if err := e.s.refusal(); err != nil {
		return wire(err)
	}
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updateCalls++
	if s.refuseUpdates {
		return wire(fmt.Errorf("update alloc: %w", structs.ErrNoLeader))
	}
	if s.breakUpdates > 0 {
		s.breakUpdates--
		for _, c := range s.conns {
			c.Close()
		}
		return wire(errors.New("update alloc: connection broken"))
	}
	for _, u := range args.Alloc {
		s.updates = append(s.updates, u)
		if a := s.allocs[u.ID]; a != nil {
			a.ClientStatus, a.ClientDescription, a.TaskStates = u.ClientStatus, u.ClientDescription, u.TaskStates
			a.ModifyIndex = s.index + 1
		}
	}
	reply.Index = s.bumpLocked()
	return nil
}

// wire is err as a real server's endpoint sends it: with its code and
// sentinel (structs.EncodeRPCError).
func wire(err error) error {
	return errors.New(structs.EncodeRPCError(err))
}
