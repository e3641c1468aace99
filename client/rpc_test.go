package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/rpc"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func TestRPCPoolErrors(t *testing.T) {
	srv := newFakeServer(t, time.Second)
	p := newRPCPool([]string{srv.addr()}, time.Minute, nil)
	defer p.close()
	ctx := context.Background()

	// A server-side error is returned as is and keeps the connection.
	var resp structs.NodeUpdateResponse
	err := p.call(ctx, structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{NodeID: "nope"}, &resp)
	if err == nil || !strings.Contains(err.Error(), "unknown node") {
		t.Fatalf("UpdateStatus of an unknown node = %v, want an unknown node error", err)
	}
	p.mu.Lock()
	kept := p.conn != nil
	p.mu.Unlock()
	if !kept {
		t.Error("a server error dropped the connection")
	}

	// A call abandoned by its context returns the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	var allocs structs.NodeAllocsResponse
	err = p.call(cctx, structs.RPCNodeGetAllocs, &structs.NodeSpecificRequest{NodeID: "n", QueryOptions: structs.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: time.Second}}, &allocs)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call = %v, want context.Canceled", err)
	}

	// After close, calls are refused.
	p.close()
	if err := p.call(ctx, structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{}, &resp); !errors.Is(err, structs.ErrShuttingDown) {
		t.Errorf("call after close = %v, want ErrShuttingDown", err)
	}
}

func TestRPCPoolNoServerReachable(t *testing.T) {
	down := newFakeServer(t, time.Second)
	addr := down.addr()
	down.close()
	p := newRPCPool([]string{addr}, time.Minute, nil)
	defer p.close()
	var resp structs.NodeUpdateResponse
	err := p.call(context.Background(), structs.RPCNodeRegister, &structs.NodeRegisterRequest{}, &resp)
	if err == nil || !strings.Contains(err.Error(), "no server reachable") {
		t.Errorf("call = %v, want no server reachable", err)
	}
}

// wedgedServer accepts connections and reads them, but never answers: a
// server stuck on a lock, or a peer gone without a reset.
func wedgedServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				io.Copy(io.Discard, conn)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestRPCPoolGivesUpOnSilentServer: a server that never answers is
// dropped after the pool's timeout and the call moves on to the next
// server, instead of every call hanging on the dead one.
func TestRPCPoolGivesUpOnSilentServer(t *testing.T) {
	good := newFakeServer(t, time.Second)
	const timeout = 100 * time.Millisecond
	p := newRPCPool([]string{wedgedServer(t), good.addr()}, timeout, nil)
	defer p.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	node := &structs.Node{ID: structs.GenerateUUID()}
	var resp structs.NodeUpdateResponse
	start := time.Now()
	if err := p.call(ctx, structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: node}, &resp); err != nil {
		t.Fatalf("call = %v, want it answered by the second server after the first timed out", err)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("call took %v, want at least the silent server's timeout %v", took, timeout)
	}
	if err := p.call(ctx, structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: node}, &resp); err != nil {
		t.Fatalf("next call = %v, want it answered by the second server", err)
	}
	if r, _ := good.counts(); r != 2 {
		t.Errorf("good server saw %d registrations, want 2", r)
	}

	// With only the silent server, the call fails with a 'no answer' error.
	alone := newRPCPool([]string{wedgedServer(t)}, timeout, nil)
	defer alone.close()
	err := alone.call(ctx, structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: node}, &resp)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("call to a lone silent server = %v, want a 'no answer' error before the test's deadline", err)
	}

	// A blocking query may take its wait, and a little more.
	var allocs structs.NodeAllocsResponse
	q := &structs.NodeSpecificRequest{NodeID: node.ID, QueryOptions: structs.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: 300 * time.Millisecond}}
	if err := p.callBlocking(ctx, 300*time.Millisecond, structs.RPCNodeGetAllocs, q, &allocs); err != nil {
		t.Errorf("blocking query held for its wait = %v, want an answer", err)
	}
}

// TestRPCPoolMovesOnFromFollower: a "not the leader" answer (a server
// that lost its leadership under the call, or one that cannot forward)
// sends the call to the next server at once, and later calls stay there.
func TestRPCPoolMovesOnFromFollower(t *testing.T) {
	follower, leader := newFakeServer(t, time.Second), newFakeServer(t, time.Second)
	follower.set(func(s *fakeServer) { s.follower = true })
	p := newRPCPool([]string{follower.addr(), leader.addr()}, time.Minute, nil)
	defer p.close()
	node := &structs.Node{ID: structs.GenerateUUID()}
	for i := range 2 {
		var resp structs.NodeUpdateResponse
		if err := p.call(context.Background(), structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: node}, &resp); err != nil {
			t.Fatalf("call %d = %v, want it answered by the leader", i, err)
		}
	}
	if r, _ := leader.counts(); r != 2 {
		t.Errorf("leader saw %d registrations, want 2", r)
	}

	// With no leader among the servers, the call fails after one try of each.
	leader.set(func(s *fakeServer) { s.follower = true })
	var resp structs.NodeUpdateResponse
	err := p.call(context.Background(), structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: node}, &resp)
	if !isLeaderless(errors.Unwrap(err)) {
		t.Errorf("call with only followers = %v, want not the leader", err)
	}
}

// TestRPCPoolDialDoesNotHoldOthers: while one call dials a server that
// does not answer, another call whose context ends returns at once, and
// close does not wait for the dial; the dial's connection, made after
// close, is closed rather than kept.
func TestRPCPoolDialDoesNotHoldOthers(t *testing.T) {
	release := make(chan struct{})
	dialed := make(chan struct{})
	p := newRPCPool([]string{"192.0.2.1:4647"}, time.Minute, nil)
	var conns []net.Conn
	var mu sync.Mutex
	p.dial = func(ctx context.Context, addr string) (*serverConn, error) {
		close(dialed)
		<-release // a server that takes its time to accept
		a, b := net.Pipe()
		mu.Lock()
		conns = append(conns, b)
		mu.Unlock()
		return &serverConn{rpc: rpc.NewClientWithCodec(structs.NewRPCClientCodec(a))}, nil
	}
	first := make(chan error, 1)
	go func() {
		var resp structs.NodeUpdateResponse
		first <- p.call(context.Background(), structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{}, &resp)
	}()
	<-dialed

	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	second := make(chan error, 1)
	go func() {
		var resp structs.NodeUpdateResponse
		second <- p.call(ctx, structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{}, &resp)
	}()
	select {
	case err := <-second:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call during another's dial = %v, want its deadline", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a call with a 50ms deadline waited for another call's dial")
	}

	closed := make(chan struct{})
	go func() { p.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("close waited for the dial in progress")
	}

	released = true
	close(release)
	if err := <-first; !errors.Is(err, structs.ErrShuttingDown) {
		t.Errorf("the dialing call after close = %v, want ErrShuttingDown", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Fatalf("dials = %d, want 1", len(conns))
	}
	// The pool closed its end: the server's end reads EOF.
	if _, err := conns[0].Read(make([]byte, 1)); err == nil {
		t.Error("the connection dialed after close is still open")
	}
}

// TestRPCPoolUserCalls: a user's write through a client-only agent is
// sent once, even when its connection breaks under it (it may have
// applied: the caller is told, and it is not applied twice on the next
// server); a user's call that times out or is refused keeps the
// connection, which carries the node's own traffic.
func TestRPCPoolUserCalls(t *testing.T) {
	a, b := newFakeServer(t, time.Second), newFakeServer(t, time.Second)
	p := newRPCPool([]string{a.addr(), b.addr()}, time.Minute, nil)
	defer p.close()
	ctx := context.Background()
	upd := &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: "a1", NodeID: "n1"}}}

	a.set(func(s *fakeServer) { s.breakUpdates = 1 })
	if err := p.callUser(ctx, time.Minute, structs.RPCNodeUpdateAlloc, upd, &structs.GenericResponse{}); err == nil {
		t.Fatal("a write whose connection broke under it succeeded")
	}
	var sent int
	for _, s := range []*fakeServer{a, b} {
		s.set(func(s *fakeServer) { sent += s.updateCalls })
	}
	if sent != 1 {
		t.Errorf("the write reached servers %d times, want once", sent)
	}

	// Refused (no leader): an answer, not a broken connection.
	var resp structs.NodeUpdateResponse
	for _, s := range []*fakeServer{a, b} {
		s.set(func(s *fakeServer) { s.leaderless = true })
	}
	err := p.callUser(ctx, time.Minute, structs.RPCNodeUpdateStatus, &structs.NodeUpdateStatusRequest{NodeID: "n1"}, &resp)
	if !errors.Is(err, structs.ErrNoLeader) {
		t.Fatalf("user call to a leaderless server = %v, want ErrNoLeader", err)
	}
	p.mu.Lock()
	conn := p.conn
	p.mu.Unlock()
	// Timed out: the connection stays.
	for _, s := range []*fakeServer{a, b} {
		s.set(func(s *fakeServer) { s.leaderless = false })
	}
	var allocs structs.NodeAllocsResponse
	err = p.callUser(ctx, 50*time.Millisecond, structs.RPCNodeGetAllocs,
		&structs.NodeSpecificRequest{NodeID: "n", QueryOptions: structs.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: time.Second}}, &allocs)
	if !errors.Is(err, structs.ErrUnavailable) {
		t.Errorf("timed-out user call = %v, want ErrUnavailable", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if conn == nil || p.conn != conn {
		t.Error("a refused or timed-out user call dropped the node's connection")
	}
}
