package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/events"
	"github.com/droverhq/drover/structs"
)

// Event stream defaults.
const (
	// DefaultEventHeartbeat is how often an idle stream sends {} (Nomad
	// sends one every 10 s) and re-checks its token.
	DefaultEventHeartbeat = 10 * time.Second
	// eventWriteTimeout bounds writing one frame to a subscriber: one
	// that reads nothing for this long is cut off.
	eventWriteTimeout = 30 * time.Second
	// maxFrameBytes keeps a frame's JSON within a stream message, with
	// room for the message's own encoding.
	maxFrameBytes = structs.MaxStreamMessage - 64<<10
)

// EventsConfig sizes a server's event stream; zero fields take the
// defaults.
type EventsConfig struct {
	// BufferSize is how many Raft indexes' events the ring keeps for
	// subscribers to resume from (events.DefaultBufferSize, 100).
	BufferSize int
	// MaxSubscriptions bounds the streams open on the server
	// (events.DefaultMaxSubscriptions, 1000); more are refused with 503.
	MaxSubscriptions int
	// Heartbeat is DefaultEventHeartbeat unless set (tests shorten it).
	Heartbeat time.Duration
}

// setupEvents creates the server's event broker and has the FSM publish
// into it; every server has its own, leader or follower.
func (s *Server) setupEvents() {
	s.eventBroker = events.NewBroker(events.Config{
		BufferSize:       s.config.Events.BufferSize,
		MaxSubscriptions: s.config.Events.MaxSubscriptions,
	})
	s.fsm.SetEventSink(s.eventBroker)
}

// EventSubscriptions returns the number of event streams open on the
// server.
func (s *Server) EventSubscriptions() int { return s.eventBroker.Subscriptions() }

// serveEventStream serves structs.RPCEventStream on conn until the
// caller goes, the server shuts down, the subscriber falls behind, or
// its token stops being valid: it answers the call, then writes one
// StreamMsg per frame, its Data the frame's JSON (an NDJSON line without
// the newline), and a heartbeat {} when idle. Each event is filtered by
// what the token may read at the time it is sent.
func (s *Server) serveEventStream(conn net.Conn, token string, rawArgs []byte) {
	var req structs.EventStreamRequest
	if err := structs.Decode(rawArgs, &req); err != nil {
		writeStreamError(conn, fmt.Errorf("%s: decode request: %w: %v", structs.RPCEventStream, structs.ErrInvalid, err))
		return
	}
	a, err := s.authorizeEvents(token, &req)
	if err != nil {
		writeStreamError(conn, fmt.Errorf("%s: %w", structs.RPCEventStream, err))
		return
	}
	sub, err := s.eventBroker.Subscribe(subscriptionOwner(token), &req)
	if err != nil {
		writeStreamError(conn, fmt.Errorf("%s: %w", structs.RPCEventStream, err))
		return
	}
	defer sub.Close()
	if err := structs.WriteStreamMsg(conn, &structs.StreamResponse{}); err != nil {
		return
	}
	// The caller sends nothing more: a read ends when it goes.
	ctx, cancel := context.WithCancel(context.Background())
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		_, _ = io.Copy(io.Discard, conn)
		cancel()
	}()
	defer func() {
		_ = conn.Close()
		<-readerDone
	}()
	err = s.streamEvents(ctx, conn, sub, token, a)
	if err != nil && ctx.Err() == nil {
		_ = conn.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		_ = structs.WriteStreamMsg(conn, &structs.StreamMsg{Error: structs.EncodeRPCError(err)})
	}
}

// streamEvents writes sub's frames to conn until ctx ends or an error.
func (s *Server) streamEvents(ctx context.Context, conn net.Conn, sub *events.Subscription, token string, a *acl.ACL) error {
	heartbeat := s.config.Events.Heartbeat
	if heartbeat <= 0 {
		heartbeat = DefaultEventHeartbeat
	}
	allow := func(e *structs.Event) bool { return eventAllowed(a, e) }
	for {
		waitCtx, cancel := context.WithTimeout(ctx, heartbeat)
		batch, err := sub.Next(waitCtx, allow)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			batch = events.Batch{} // a heartbeat
		case err != nil:
			return err
		}
		// The token may have been deleted, expired or changed its
		// policies since the last frame.
		if a, _, err = s.resolveToken(token); err != nil {
			return fmt.Errorf("event stream token: %w", err)
		}
		n := len(batch.Events)
		batch.Events = slices.DeleteFunc(batch.Events, func(e structs.Event) bool { return !eventAllowed(a, &e) })
		if n > 0 && len(batch.Events) == 0 {
			continue
		}
		if err := writeFrames(conn, batch); err != nil {
			return nil // the caller is gone or stuck
		}
	}
}

// writeFrames writes batch as frames of at most maxFrameBytes, each as
// soon as it is full (an empty batch is a heartbeat). An event's JSON is
// encoded once for every subscriber that sends it (Event.JSON). An event
// too large for a frame of its own is sent without its payload, marked
// {"Truncated": true}.
func writeFrames(conn net.Conn, batch events.Batch) error {
	write := func(f []byte) error {
		_ = conn.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		return structs.WriteStreamMsg(conn, &structs.StreamMsg{Data: f})
	}
	if len(batch.Events) == 0 {
		return write([]byte("{}"))
	}
	var cur []json.RawMessage
	size := 0
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		b, err := json.Marshal(struct {
			Index  uint64
			Events []json.RawMessage
		}{batch.Index, cur})
		if err != nil {
			return err
		}
		cur, size = nil, 0
		return write(b)
	}
	for i := range batch.Events {
		b, err := batch.Events[i].JSON()
		if err != nil {
			return fmt.Errorf("encode event %s %s: %w", batch.Events[i].Type, batch.Events[i].Key, err)
		}
		if len(b) > maxFrameBytes {
			e := batch.Events[i]
			e.Payload = map[string]any{"Truncated": true}
			if b, err = json.Marshal(&e); err != nil {
				return err
			}
		}
		if size+len(b) > maxFrameBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		cur = append(cur, b)
		size += len(b) + 1
	}
	return flush()
}

// authorizeEvents resolves token and checks that it may read one of the
// topics asked for, in the namespace asked for: a token that could get
// no event at all is refused rather than kept waiting.
func (s *Server) authorizeEvents(token string, req *structs.EventStreamRequest) (*acl.ACL, error) {
	a, _, err := s.resolveToken(token)
	if err != nil {
		return nil, err
	}
	ns := req.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	topics := req.Topics
	if len(topics) == 0 {
		topics = map[string][]string{structs.TopicAll: nil}
	}
	for topic := range topics {
		if topicAllowed(a, topic, ns) {
			return a, nil
		}
	}
	return nil, errPermissionDenied
}

// topicAllowed reports whether a may read some events of topic in
// namespace ns.
func topicAllowed(a *acl.ACL, topic, ns string) bool {
	switch topic {
	case structs.TopicAll:
		// Not for the default queue's events alone, which every token
		// may read: "everything" asks for more.
		for _, t := range []string{structs.TopicJob, structs.TopicNode, structs.TopicQuota} {
			if topicAllowed(a, t, ns) {
				return true
			}
		}
		return false
	case structs.TopicQueue:
		return a.AllowQueue(structs.DefaultQueue, false) // open to all
	}
	return eventAllowed(a, &structs.Event{Topic: topic, Namespace: ns, Key: "*"})
}

// eventAllowed reports whether a may read e: the read-job capability in
// its namespace for jobs, allocations, evaluations, deployments and
// services, node read for nodes and GPUs, quota read for quotas, the
// queue's read for queues. A management token reads everything.
func eventAllowed(a *acl.ACL, e *structs.Event) bool {
	if a.IsManagement() {
		return true
	}
	switch e.Topic {
	case structs.TopicJob, structs.TopicAllocation, structs.TopicEvaluation, structs.TopicDeployment, structs.TopicService:
		return a.AllowNamespaceOperation(e.Namespace, acl.CapReadJob)
	case structs.TopicNode, structs.TopicGPU:
		return a.AllowNodeRead()
	case structs.TopicQuota:
		return a.AllowQuotaRead()
	case structs.TopicQueue:
		return a.AllowQueue(e.Key, false)
	}
	return false
}

// subscriptionOwner names the holder of an event subscription for the
// broker's per-owner limit: a digest of the token (never the secret
// itself), "" for anonymous callers.
func subscriptionOwner(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}
