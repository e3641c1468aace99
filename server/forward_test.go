package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"

	"github.com/droverhq/drover/structs"
)

// TestForward_FollowerServesWrites: a job registered through a follower,
// in process and over TCP, and a node registered through one, are
// stored by the leader, replicated, and scheduled; the follower answers
// with the leader's reply. Its forwarding runs on one yamux session.
func TestForward_FollowerServesWrites(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	f := c.Followers()[0]
	conn := dialRPC(t, f.RPCAddr())

	nodeResp := registerNode(t, conn, gpuNode("n1", 2))
	wantServers := leader.Peers()
	slices.Sort(wantServers)
	gotServers := slices.Sorted(slices.Values(nodeResp.Servers))
	if len(wantServers) != 3 || !slices.Equal(gotServers, wantServers) {
		t.Errorf("Node.Register answered servers %v, want the 3 Raft peers %v", gotServers, wantServers)
	}

	inProc := registerJob(t, f, gpuJob("via-rpc", structs.JobTypeService, 1, 1))
	var overTCP structs.JobRegisterResponse
	if err := conn.Call(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: gpuJob("via-tcp", structs.JobTypeService, 1, 1)}, &overTCP); err != nil {
		t.Fatalf("Job.Register over TCP through a follower: %v", err)
	}
	for id, resp := range map[string]*structs.JobRegisterResponse{"via-rpc": inProc, "via-tcp": &overTCP} {
		if resp.EvalID == "" || resp.Index == 0 || !resp.KnownLeader {
			t.Errorf("%s: reply %+v, want the leader's eval ID and index", id, resp)
		}
		if e := evalByID(t, leader, resp.EvalID); e == nil || e.JobID != id {
			t.Errorf("%s: leader has eval %+v, want the one the follower answered", id, e)
		}
		waitForJob(t, c, id)
		waitFor(t, 10*time.Second, func() (bool, string) {
			return len(liveAllocs(t, leader, id)) == 1, "job " + id + " not placed"
		})
	}

	f.pool.mu.Lock()
	sessions := len(f.pool.sessions)
	f.pool.mu.Unlock()
	if sessions != 1 {
		t.Errorf("follower holds %d sessions, want 1 (to the leader)", sessions)
	}
}

// TestForward_ReadsOnFollower: a consistent read through a follower is
// the leader's answer; a stale one is the follower's own, with its
// contact. Cut off, the follower still answers stale reads, saying it
// knows no leader and since when it has not heard one, while consistent
// reads and writes fail with "no cluster leader" after the hold timeout.
func TestForward_ReadsOnFollower(t *testing.T) {
	const hold = 300 * time.Millisecond
	c := newTestCluster(t, 3, withServerConfig(func(_ int, cfg *Config) { cfg.RPCHoldTimeout = hold }))
	c.WaitForLeader(5 * time.Second)
	f := c.Followers()[0]

	set := &structs.SchedulerSetConfigRequest{Config: &structs.SchedulerConfiguration{SchedulerAlgorithm: "spread"}}
	var setResp structs.SchedulerSetConfigurationResponse
	if err := f.RPC(structs.RPCOperatorSchedulerSetConfiguration, set, &setResp); err != nil || !setResp.Updated {
		t.Fatalf("set through a follower: %+v, %v", setResp, err)
	}
	read := func(stale bool) (*structs.SchedulerConfigurationResponse, error) {
		var resp structs.SchedulerConfigurationResponse
		err := f.RPC(structs.RPCOperatorSchedulerGetConfiguration, &structs.SchedulerConfigurationRequest{QueryOptions: structs.QueryOptions{AllowStale: stale}}, &resp)
		return &resp, err
	}
	consistent, err := read(false)
	if err != nil || consistent.SchedulerConfig.SchedulerAlgorithm != "spread" || consistent.Index != setResp.Index ||
		consistent.LastContact != 0 || !consistent.KnownLeader {
		t.Fatalf("consistent read: %+v (config %+v), %v; want spread at index %d from the leader (contact 0)", consistent, consistent.SchedulerConfig, err, setResp.Index)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		stale, err := read(true)
		return err == nil && stale.Index == setResp.Index && stale.KnownLeader && stale.LastContact > 0 && stale.LastContact < time.Second,
			fmt.Sprintf("stale read: %+v, %v; want the follower's view at index %d with a recent contact", stale, err, setResp.Index)
	})

	c.Partition(c.Index(f))
	waitFor(t, 10*time.Second, func() (bool, string) {
		stale, err := read(true)
		return err == nil && !stale.KnownLeader && stale.LastContact > raftHeartbeatTimeout && stale.SchedulerConfig.SchedulerAlgorithm == "spread",
			fmt.Sprintf("stale read on the cut-off follower: %+v, %v; want its own state, no known leader, an old contact", stale, err)
	})
	start := time.Now()
	if _, err := read(false); !errors.Is(err, structs.ErrNoLeader) {
		t.Errorf("consistent read on the cut-off follower: %v, want %v", err, structs.ErrNoLeader)
	}
	if took := time.Since(start); took < hold {
		t.Errorf("consistent read failed after %v, want it to wait the hold timeout %v first", took, hold)
	}
	if err := f.ReadBarrier(context.Background()); !errors.Is(err, structs.ErrNoLeader) {
		t.Errorf("read barrier on the cut-off follower: %v, want %v", err, structs.ErrNoLeader)
	}
	err = f.RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: gpuJob("cut-off", structs.JobTypeBatch, 1, 1)}, &structs.JobRegisterResponse{})
	if !errors.Is(err, structs.ErrNoLeader) {
		t.Errorf("write on the cut-off follower: %v, want %v", err, structs.ErrNoLeader)
	}
}

// TestForward_ReadBarrier: after a follower's read barrier, its own state
// holds every write the leader acknowledged before it.
func TestForward_ReadBarrier(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	for i := range 20 {
		registerJob(t, leader, gpuJob(fmt.Sprintf("j%d", i), structs.JobTypeBatch, 1, 1))
		for _, f := range c.Followers() {
			if err := f.ReadBarrier(context.Background()); err != nil {
				t.Fatalf("read barrier: %v", err)
			}
			if job, err := f.State().JobByID(nil, structs.DefaultNamespace, fmt.Sprintf("j%d", i)); err != nil || job == nil {
				t.Fatalf("after the barrier, follower %s lacks job j%d (err %v)", f.RPCAddr(), i, err)
			}
		}
	}
	if err := leader.ReadBarrier(context.Background()); err != nil {
		t.Errorf("read barrier on the leader: %v", err)
	}
}

// TestConnPool: calls to one server share one yamux session, a blocking
// call delays no other, a broken session is replaced, and a closed pool
// refuses calls.
func TestConnPool(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	node := gpuNode("n1", 1)
	if err := s.RPC(structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: node}, &structs.NodeUpdateResponse{}); err != nil {
		t.Fatal(err)
	}
	p := newConnPool(hclog.NewNullLogger(), (*peerFilter)(nil).dial, time.Second)
	defer p.Close()
	addr := s.RPCAddr().String()

	blocking := make(chan error, 1)
	go func() {
		// It must outlast the steps below on a loaded machine: only the
		// broken session may end it.
		q := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID, QueryOptions: structs.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: 2 * time.Minute}}
		blocking <- p.call(addr, 5*time.Minute, structs.RPCNodeGetAllocs, q, &structs.NodeAllocsResponse{})
	}()
	// Pings beside the blocking query: queued behind it, each would wait
	// out its 2 min and time out at 20 s. (No elapsed-time check: on a
	// loaded machine a ping may take seconds without being queued.)
	for i := range 5 {
		var reply struct{}
		if err := p.call(addr, 20*time.Second, structs.RPCStatusPing, &struct{}{}, &reply); err != nil {
			t.Fatalf("ping %d beside a blocking query: %v", i, err)
		}
	}
	select {
	case err := <-blocking:
		t.Fatalf("blocking query returned early: %v", err)
	default:
	}
	p.mu.Lock()
	sess := p.sessions[addr]
	count := len(p.sessions)
	p.mu.Unlock()
	if count != 1 {
		t.Errorf("pool: %d sessions, want 1", count)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		return sess.NumStreams() == 1, fmt.Sprintf("%d open streams, want the blocking query's only", sess.NumStreams())
	})

	// An endpoint's error is the server's answer and keeps the session.
	err := p.call(addr, time.Second, structs.RPCJobRegister, &structs.JobRegisterRequest{}, &structs.JobRegisterResponse{})
	if !structs.IsRemote(err) || !errors.Is(err, structs.ErrInvalid) || classify(err) != outcomeAnswered {
		t.Errorf("bad request: %v, want the server's answer", err)
	}
	// A session broken under the pool is replaced by the next call.
	_ = sess.Close()
	if err := <-blocking; err == nil || structs.IsRemote(err) {
		t.Errorf("blocking query on a closed session: %v, want a transport error", err)
	}
	if err := p.call(addr, time.Second, structs.RPCStatusPing, &struct{}{}, &struct{}{}); err != nil {
		t.Errorf("ping after the session broke: %v", err)
	}

	p.Close()
	if err := p.call(addr, time.Second, structs.RPCStatusPing, &struct{}{}, &struct{}{}); !errors.Is(err, structs.ErrShuttingDown) || classify(err) != outcomeAnswered {
		t.Errorf("call on a closed pool: %v, want %v", err, structs.ErrShuttingDown)
	}
}

// dyingLeader accepts multiplexed sessions and drops each connection as
// soon as a request arrives on it: a leader that dies mid-call.
func dyingLeader(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
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
				var kind [1]byte
				if _, err := io.ReadFull(conn, kind[:]); err != nil || kind[0] != structs.RPCTypeMultiplex {
					return
				}
				sess, err := yamux.Server(conn, yamuxConfig(hclog.NewNullLogger()))
				if err != nil {
					return
				}
				defer sess.Close()
				stream, err := sess.Accept()
				if err != nil {
					return
				}
				// The stream type byte, then the first byte of the request.
				_, _ = io.ReadFull(stream, make([]byte, 2))
			}()
		}
	}()
	return ln.Addr().String()
}

// TestForward_OutcomeOfBrokenCalls: a call that never left is "not
// applied" (always retried); one whose leader died after it was sent is
// "unknown": retried only when idempotent, else reported as such.
func TestForward_OutcomeOfBrokenCalls(t *testing.T) {
	t.Parallel()
	p := newConnPool(hclog.NewNullLogger(), (*peerFilter)(nil).dial, time.Second)
	defer p.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	_ = ln.Close()
	err = p.call(refused, time.Second, structs.RPCAllocStop, &structs.AllocStopRequest{AllocID: "a"}, &structs.AllocStopResponse{})
	if !errors.Is(err, errNotSent) || classify(err) != outcomeNotApplied {
		t.Errorf("call to a closed port: %v, want not applied", err)
	}

	dying := dyingLeader(t)
	err = p.call(dying, 5*time.Second, structs.RPCAllocStop, &structs.AllocStopRequest{AllocID: "a"}, &structs.AllocStopResponse{})
	if err == nil || classify(err) != outcomeUnknown {
		t.Fatalf("call to a leader that dies: %v, want an unknown outcome", err)
	}
	write, read := structs.WriteRequest{}, structs.QueryOptions{}
	if retryable(structs.RPCAllocStop, write, outcomeUnknown) || !retryable(structs.RPCJobRegister, write, outcomeUnknown) ||
		!retryable(structs.RPCNodeGetAllocs, read, outcomeUnknown) || !retryable(structs.RPCAllocStop, write, outcomeNotApplied) {
		t.Error("retryable: want unknown outcomes retried only for reads and idempotent writes, unapplied ones always")
	}
	ferr := forwardError(structs.RPCAllocStop, dying, err)
	if !errors.Is(ferr, structs.ErrOutcomeUnknown) {
		t.Errorf("forwardError: %v, want %v", ferr, structs.ErrOutcomeUnknown)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"endpoint error", remote(fmt.Errorf("job %q: %w", "x", structs.ErrInvalid)), outcomeAnswered},
		{"local endpoint error", fmt.Errorf("job %q: %w", "x", structs.ErrNotFound), outcomeAnswered},
		{"remote not the leader", remote(fmt.Errorf("register job \"x\": raft apply: %w (node is not the leader)", structs.ErrNotLeader)), outcomeNotApplied},
		{"remote no leader", remote(fmt.Errorf("Job.Register: %w (hold timeout expired: waited 5s)", structs.ErrNoLeader)), outcomeNotApplied},
		{"local not the leader", fmt.Errorf("raft apply: %w (%v)", structs.ErrNotLeader, raft.ErrNotLeader), outcomeNotApplied},
		{"local leadership lost", fmt.Errorf("raft apply: %w (%v)", structs.ErrOutcomeUnknown, raft.ErrLeadershipLost), outcomeUnknown},
		{"remote leadership lost", remote(fmt.Errorf("raft apply: %w (%v)", structs.ErrOutcomeUnknown, raft.ErrLeadershipLost)), outcomeUnknown},
		{"remote outcome unknown", remote(structs.ErrOutcomeUnknown), outcomeUnknown},
		{"not sent", fmt.Errorf("%w: dial: refused", errNotSent), outcomeNotApplied},
		{"connection lost", fmt.Errorf("%w: %w", errNoAnswer, io.ErrUnexpectedEOF), outcomeUnknown},
		{"shutting down", fmt.Errorf("Job.Register: %w", structs.ErrShuttingDown), outcomeAnswered},
		{"remote shutting down", remote(fmt.Errorf("Job.Register: %w", structs.ErrShuttingDown)), outcomeUnknown},
		// The text says "not the leader", the code says bad request.
		{"remote text is not a class", remote(fmt.Errorf("job name %q: %w", "not the leader", structs.ErrInvalid)), outcomeAnswered},
		{"uncoded remote text", rpc.ServerError("not the leader"), outcomeAnswered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.err); got != tt.want {
				t.Errorf("classify(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args any
		want time.Duration
	}{
		{"write", &structs.JobRegisterRequest{}, forwardTimeout},
		{"read that does not block", &structs.NodeSpecificRequest{QueryOptions: structs.QueryOptions{MaxQueryTime: time.Minute}}, forwardTimeout},
		{"blocking read", &structs.NodeSpecificRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: 5, MaxQueryTime: time.Minute}}, forwardTimeout + time.Minute},
		{"blocking read, server's wait", &structs.NodeSpecificRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: 5}}, forwardTimeout + maxQueryTime},
		{"blocking read, too long", &structs.NodeSpecificRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: 5, MaxQueryTime: time.Hour}}, forwardTimeout + maxQueryTime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := callTimeout(tt.args); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHoldTimer: waits grow from retryBackoffMin to retryBackoffMax and
// end once the hold, counted from the first retry, is over.
func TestHoldTimer(t *testing.T) {
	t.Parallel()
	h := holdTimer{hold: time.Hour}
	var waits []time.Duration
	for range 6 {
		w, ok := h.next()
		if !ok {
			t.Fatal("hold over within an hour")
		}
		waits = append(waits, w)
	}
	want := []time.Duration{retryBackoffMin, 2 * retryBackoffMin, 4 * retryBackoffMin, 8 * retryBackoffMin, retryBackoffMax, retryBackoffMax}
	if !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}

	short := holdTimer{hold: 30 * time.Millisecond}
	var total time.Duration
	for {
		w, ok := short.next()
		if !ok {
			break
		}
		total += w
		time.Sleep(w)
	}
	if total > 30*time.Millisecond {
		t.Errorf("waited %v in all, want at most the hold of 30ms", total)
	}
}

// TestForward_NewLeaderWaitsForItsBarrier: a leader whose state has not
// caught up (its barrier not done) holds requests instead of answering
// from a state that may lack committed entries.
func TestForward_NewLeaderWaitsForItsBarrier(t *testing.T) {
	s := startServer(t, testConfig(t))
	s.leaderReady.Store(false)
	done := make(chan error, 1)
	go func() {
		done <- s.RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: gpuJob("held", structs.JobTypeBatch, 1, 0)}, &structs.JobRegisterResponse{})
	}()
	select {
	case err := <-done:
		t.Fatalf("register answered (%v) before the leader's state caught up", err)
	case <-time.After(300 * time.Millisecond):
	}
	s.leaderReady.Store(true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("register after the barrier: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("register still held after the leader caught up")
	}
}

// remote is err as a caller on another server gets it.
func remote(err error) error {
	return structs.DecodeRPCError(rpc.ServerError(structs.EncodeRPCError(err)))
}
