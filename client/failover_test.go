package client

import (
	"slices"
	"testing"
	"time"
)

// TestLearnsServersAndFailsOver: a client configured with one server
// learns the others from its replies, and when that server dies it
// registers with and heartbeats to a learned one.
func TestLearnsServersAndFailsOver(t *testing.T) {
	first, second := newFakeServer(t, 200*time.Millisecond), newFakeServer(t, 200*time.Millisecond)
	first.set(func(s *fakeServer) { s.servers = []string{first.addr(), second.addr()} })
	c := startClient(t, testConfig(t, first.addr()))
	waitFor(t, "heartbeats to the configured server", func() bool { _, h := first.counts(); return h >= 1 })
	c.rpc.mu.Lock()
	known := slices.Clone(c.rpc.servers)
	c.rpc.mu.Unlock()
	if want := []string{first.addr(), second.addr()}; !slices.Equal(known, want) {
		t.Fatalf("client knows servers %v, want %v", known, want)
	}

	first.close()
	waitFor(t, "registration and heartbeats with the learned server", func() bool {
		r, h := second.counts()
		return r >= 1 && h >= 2
	})
	if second.node(c.NodeID()) == nil {
		t.Error("learned server has no node with the client's ID")
	}
}

// TestMovesOnFromServerWithoutLeader: a server that answers "no cluster
// leader" (one cut off from the others) does not hold the client: its
// registration and heartbeats go to the next server at once.
func TestMovesOnFromServerWithoutLeader(t *testing.T) {
	cutOff, healthy := newFakeServer(t, 200*time.Millisecond), newFakeServer(t, 200*time.Millisecond)
	cutOff.set(func(s *fakeServer) { s.leaderless = true })
	start := time.Now()
	startClient(t, testConfig(t, cutOff.addr(), healthy.addr()))
	waitFor(t, "registration with the healthy server", func() bool { r, _ := healthy.counts(); return r == 1 })
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("registration took %v, want the cut-off server skipped at once", took)
	}
	waitFor(t, "heartbeats to the healthy server", func() bool { _, h := healthy.counts(); return h >= 2 })
	if r, h := cutOff.counts(); r != 0 || h != 0 {
		t.Errorf("cut-off server recorded %d registrations and %d heartbeats, want none", r, h)
	}
}
