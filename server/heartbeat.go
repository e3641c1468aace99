package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/droverhq/drover/structs"
)

// heartbeats keeps one TTL timer per ready node while this server leads.
// A timer that fires queues the node as expired; the leader's reaper
// drains the queue and marks those nodes down.
type heartbeats struct {
	// statusMu is held from reading a node's status to writing it and
	// arming or stopping its timer, by heartbeats, registrations and the
	// reaper alike, so that a heartbeat that arrives as the TTL expires
	// cannot be followed by the reaper marking the node down.
	statusMu sync.Mutex

	mu      sync.Mutex
	enabled bool
	timers  map[string]*hbTimer
	expired map[string]struct{}
	notify  chan struct{} // one slot: expired is not empty
}

// hbTimer is one node's timer; its pointer identifies the generation, so
// a timer that fires after being replaced is ignored. ttl and armedAt
// say how it was armed.
type hbTimer struct {
	t       *time.Timer
	ttl     time.Duration
	armedAt time.Time
}

func newHeartbeats() *heartbeats {
	return &heartbeats{timers: map[string]*hbTimer{}, expired: map[string]struct{}{}, notify: make(chan struct{}, 1)}
}

// setEnabled turns the timers on or off; off stops and forgets them all.
func (h *heartbeats) setEnabled(enabled bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.enabled = enabled
	if enabled {
		return
	}
	for _, e := range h.timers {
		e.t.Stop()
	}
	h.timers = map[string]*hbTimer{}
	h.expired = map[string]struct{}{}
}

// reset (re)starts nodeID's timer with ttl.
func (h *heartbeats) reset(nodeID string, ttl time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		return
	}
	delete(h.expired, nodeID)
	if e, ok := h.timers[nodeID]; ok {
		e.t.Stop()
	}
	e := &hbTimer{ttl: ttl, armedAt: time.Now()}
	e.t = time.AfterFunc(ttl, func() { h.expire(nodeID, e) })
	h.timers[nodeID] = e
}

// stop forgets nodeID's timer.
func (h *heartbeats) stop(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.timers[nodeID]; ok {
		e.t.Stop()
		delete(h.timers, nodeID)
	}
	delete(h.expired, nodeID)
}

// armed reports whether nodeID's timer is running: it was reset since it
// last expired.
func (h *heartbeats) armed(nodeID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.timers[nodeID]
	return ok
}

// armedWith returns the TTL and arming time of nodeID's running timer.
func (h *heartbeats) armedWith(nodeID string) (ttl time.Duration, at time.Time, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.timers[nodeID]
	if !ok {
		return 0, time.Time{}, false
	}
	return e.ttl, e.armedAt, true
}

// expire queues nodeID if e is still its current timer.
func (h *heartbeats) expire(nodeID string, e *hbTimer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled || h.timers[nodeID] != e {
		return
	}
	delete(h.timers, nodeID)
	h.expired[nodeID] = struct{}{}
	metrics.IncrCounter([]string{"heartbeat", "missed"}, 1)
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

// drain returns and forgets the expired nodes.
func (h *heartbeats) drain() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.expired))
	for id := range h.expired {
		out = append(out, id)
	}
	h.expired = map[string]struct{}{}
	return out
}

// initializeHeartbeats gives every ready node the failover TTL, so that
// clients have time to find the new leader.
func (s *Server) initializeHeartbeats() error {
	nodes, err := s.State().Nodes(nil)
	if err != nil {
		return fmt.Errorf("initialize heartbeats: %w", err)
	}
	for _, n := range nodes {
		if n.Status == structs.NodeStatusReady {
			s.heartbeats.reset(n.ID, s.config.FailoverHeartbeatTTL)
		}
	}
	return nil
}

// reapHeartbeats marks down the nodes whose TTL expired, until ctx ends.
func (s *Server) reapHeartbeats(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.heartbeats.notify:
		}
		for _, id := range s.heartbeats.drain() {
			if err := s.markNodeDown(id); err != nil {
				s.logger.Error("mark node down", "node_id", id, "error", err)
			}
		}
	}
}

// markNodeDown sets a node's status to down with an evaluation for each
// job that has allocations on it, so the schedulers replace them. A node
// that heartbeated since its timer expired is left alone.
func (s *Server) markNodeDown(nodeID string) error {
	s.heartbeats.statusMu.Lock()
	defer s.heartbeats.statusMu.Unlock()
	if s.heartbeats.armed(nodeID) {
		return nil
	}
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil {
		return err
	}
	if node == nil || node.Status == structs.NodeStatusDown {
		return nil
	}
	evals, err := s.nodeEvals(nodeID)
	if err != nil {
		return err
	}
	s.logger.Warn("node missed its heartbeat, marking it down", "node_id", nodeID, "evals", len(evals))
	req := &structs.NodeUpdateStatusRequest{
		NodeID: nodeID, Status: structs.NodeStatusDown, UpdatedAt: time.Now().UnixNano(), Evals: evals,
	}
	_, err = s.raftApply(structs.NodeUpdateStatusLosingRequestType, req)
	return err
}

// nodeEvals returns one pending node-update evaluation per job with
// non-terminal allocations on the node.
func (s *Server) nodeEvals(nodeID string) ([]*structs.Evaluation, error) {
	snap, err := s.State().Snapshot()
	if err != nil {
		return nil, err
	}
	allocs, err := snap.AllocsByNode(nil, nodeID)
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	seen := map[[2]string]bool{}
	var evals []*structs.Evaluation
	for _, a := range allocs {
		key := [2]string{a.Namespace, a.JobID}
		if a.TerminalStatus() || seen[key] {
			continue
		}
		seen[key] = true
		job, err := snap.JobByID(nil, a.Namespace, a.JobID)
		if err != nil {
			return nil, err
		}
		if job == nil {
			job = a.Job
		}
		if job == nil {
			continue
		}
		evals = append(evals, &structs.Evaluation{
			ID: structs.GenerateUUID(), Namespace: a.Namespace, Priority: job.Priority, Type: job.Type,
			TriggeredBy: structs.EvalTriggerNodeUpdate, JobID: a.JobID, NodeID: nodeID,
			Status: structs.EvalStatusPending, CreateTime: now, ModifyTime: now,
		})
	}
	return evals, nil
}
