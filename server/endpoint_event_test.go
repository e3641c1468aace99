package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// eventServer starts a lone server with ACLs on, a short event
// heartbeat and at most two event streams, bootstraps it and creates
// namespaces team-a and team-b; it returns the management secret.
func eventServer(t *testing.T) (*Server, string) {
	t.Helper()
	cfg := testConfig(t)
	cfg.ACLEnabled = true
	cfg.Events = EventsConfig{Heartbeat: 50 * time.Millisecond, MaxSubscriptions: 16} // 2 per token
	s := startServer(t, cfg)
	var boot structs.ACLTokenUpsertResponse
	call(t, s, structs.RPCACLBootstrap, &structs.ACLTokenBootstrapRequest{}, &boot)
	mgmt := boot.Tokens[0].SecretID
	for _, ns := range []string{"team-a", "team-b"} {
		req := &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: ns}}}
		req.AuthToken = mgmt
		call(t, s, structs.RPCNamespaceUpsert, req, &structs.GenericResponse{})
	}
	return s, mgmt
}

// openEvents starts an event stream; the test's end closes it.
func openEvents(t *testing.T, s *Server, token string, req *structs.EventStreamRequest) (net.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return s.StreamCall(ctx, structs.RPCEventStream, token, req)
}

// readMsg reads one message of an event stream: a frame ({} for a
// heartbeat) or the error that ended it.
func readMsg(t *testing.T, conn net.Conn) (structs.EventFrame, string, error) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var m structs.StreamMsg
	if err := structs.ReadStreamMsg(conn, &m); err != nil {
		return structs.EventFrame{}, "", err
	}
	if m.Error != "" {
		return structs.EventFrame{}, "", structs.DecodeRPCErrorText(m.Error)
	}
	var f structs.EventFrame
	if err := json.Unmarshal(m.Data, &f); err != nil {
		t.Fatalf("frame %q: %v", m.Data, err)
	}
	return f, string(m.Data), nil
}

func registerIn(t *testing.T, s *Server, token, ns, id string) {
	t.Helper()
	job := gpuJob(id, structs.JobTypeBatch, 1, 0)
	job.Namespace = ns
	req := &structs.JobRegisterRequest{Job: job}
	req.AuthToken = token
	call(t, s, structs.RPCJobRegister, req, &structs.JobRegisterResponse{})
}

// TestEventStream_ACL: a token sees the events of the namespaces it may
// read only, even with namespace "*"; one that may read none of the
// topics is refused; deleting the token ends its stream.
func TestEventStream_ACL(t *testing.T) {
	t.Parallel()
	s, mgmt := eventServer(t)
	reader := clientToken(t, s, mgmt, "team-a-read", `namespace "team-a" { policy = "read" }`)

	if _, err := openEvents(t, s, reader.SecretID, &structs.EventStreamRequest{Namespace: "team-b", Topics: map[string][]string{"Job": {"*"}}}); !isDenied(err) {
		t.Errorf("team-b jobs with a team-a token: %v, want permission denied", err)
	}
	if _, err := openEvents(t, s, reader.SecretID, &structs.EventStreamRequest{Topics: map[string][]string{"Node": {"*"}}}); !isDenied(err) {
		t.Errorf("nodes without node read: %v, want permission denied", err)
	}
	if _, err := openEvents(t, s, "not-a-token", &structs.EventStreamRequest{}); !isDenied(err) {
		t.Errorf("unknown token: %v, want permission denied", err)
	}

	conn, err := openEvents(t, s, reader.SecretID, &structs.EventStreamRequest{Namespace: "*", Topics: map[string][]string{"Job": {"*"}}})
	if err != nil {
		t.Fatal(err)
	}
	registerIn(t, s, mgmt, "team-b", "hidden")
	registerIn(t, s, mgmt, "team-a", "shown")
	var seen []string
	for !strings.Contains(strings.Join(seen, ","), "shown") {
		f, _, err := readMsg(t, conn)
		if err != nil {
			t.Fatalf("read: %v (seen %v)", err, seen)
		}
		for _, e := range f.Events {
			seen = append(seen, e.Namespace+"/"+e.Key)
		}
	}
	if strings.Contains(strings.Join(seen, ","), "hidden") {
		t.Errorf("a team-a reader saw %v, want no team-b job", seen)
	}

	del := &structs.ACLTokenDeleteRequest{AccessorIDs: []string{reader.AccessorID}}
	del.AuthToken = mgmt
	call(t, s, structs.RPCACLDeleteTokens, del, &structs.GenericResponse{})
	for {
		_, _, err := readMsg(t, conn)
		if err == nil {
			continue // a heartbeat or a frame sent before the check
		}
		if !isDenied(err) {
			t.Errorf("stream of a deleted token ended with %v, want permission denied", err)
		}
		break
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		return s.EventSubscriptions() == 0, "the deleted token's subscription is still open"
	})
}

// TestEventStream_HeartbeatsLimitAndDisconnect: an idle stream gets {}
// heartbeats; streams over a token's share of the limit are refused
// naming it; a caller that goes frees its subscription.
func TestEventStream_HeartbeatsLimitAndDisconnect(t *testing.T) {
	t.Parallel()
	s, mgmt := eventServer(t)
	// From the end of the ring: nothing but heartbeats until a change.
	latest, _ := s.State().LatestIndex()
	req := &structs.EventStreamRequest{Topics: map[string][]string{"Job": {"nothing-matches"}}, Index: latest}
	first, err := openEvents(t, s, mgmt, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, raw, err := readMsg(t, first); err != nil || raw != "{}" {
		t.Fatalf("idle stream: got %q, %v, want a {} heartbeat", raw, err)
	}
	second, err := openEvents(t, s, mgmt, req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = openEvents(t, s, mgmt, req)
	if err == nil || !strings.Contains(err.Error(), "one token may hold 2 of the 16") || structs.CodeOf(err) != structs.CodeUnavailable {
		t.Fatalf("third stream of one token: %v, want refused as unavailable, naming its share 2 of the 16", err)
	}
	_ = first.Close()
	_ = second.Close()
	waitFor(t, 5*time.Second, func() (bool, string) {
		return s.EventSubscriptions() == 0, "subscriptions still open after their callers went"
	})
	if _, err := openEvents(t, s, mgmt, req); err != nil {
		t.Errorf("stream after the others closed: %v", err)
	}
}

// TestEventStream_BadRequest: an unknown topic is refused as invalid.
func TestEventStream_BadRequest(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	_, err := openEvents(t, s, "", &structs.EventStreamRequest{Topics: map[string][]string{"Jobz": nil}})
	if !errors.Is(err, structs.ErrInvalid) || !strings.Contains(err.Error(), "Jobz") {
		t.Errorf("unknown topic: %v, want invalid naming it", err)
	}
}

// TestEventStream_Follower: a follower publishes the entries it applies
// into its own buffer, so a stream from it sees the leader's writes.
func TestEventStream_Follower(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	leader := c.WaitForLeader(5 * time.Second)
	follower := c.Followers()[0]
	conn, err := openEvents(t, follower, "", &structs.EventStreamRequest{Topics: map[string][]string{"Job": {"from-leader"}}})
	if err != nil {
		t.Fatal(err)
	}
	registerJob(t, leader, gpuJob("from-leader", structs.JobTypeBatch, 1, 0))
	for {
		f, _, err := readMsg(t, conn)
		if err != nil {
			t.Fatalf("follower's stream: %v", err)
		}
		if len(f.Events) > 0 {
			if e := f.Events[0]; e.Type != structs.TypeJobRegistered || e.Key != "from-leader" {
				t.Errorf("first event: %s %s, want JobRegistered from-leader", e.Type, e.Key)
			}
			return
		}
	}
}

// TestEventStream_ShutdownEndsStreams: a server shutting down ends its
// open streams with an error instead of waiting on them.
func TestEventStream_ShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	conn, err := openEvents(t, s, "", &structs.EventStreamRequest{Topics: map[string][]string{"Job": {"none"}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- s.Shutdown() }()
	for {
		if _, _, err := readMsg(t, conn); err != nil {
			if structs.CodeOf(err) != structs.CodeUnavailable {
				t.Errorf("stream at shutdown ended with %v, want unavailable", err)
			}
			break
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("shutdown still waiting 30s after the stream ended")
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		return s.EventSubscriptions() == 0, "a subscription still open after shutdown"
	})
}
