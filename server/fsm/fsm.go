// Package fsm is the servers' Raft state machine: it decodes each
// committed log entry (a 1-byte structs.MessageType and a msgpack body)
// and applies it to the state store, tells the server what changed
// through a Notifier, and snapshots and restores the whole store.
//
// It must not block, do I/O other than snapshot streams, or make
// scheduling decisions: every server applies the same entries and must
// reach the same state.
package fsm

import (
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// Notifier hears about changes the leader acts on. Its methods are called
// from Apply, so they must not block; the evaluations passed are copies
// the notifier may keep.
type Notifier interface {
	// EvalsUpserted reports evaluations just written: pending ones go to
	// the broker, blocked ones to the blocked evals.
	EvalsUpserted(evals []*structs.Evaluation)
	// CapacityChanged reports that a node became ready or registered, or
	// that allocations were stopped or finished, at index.
	CapacityChanged(index uint64)
}

// FSM applies Raft log entries to a state store. It implements
// raft.FSM.
type FSM struct {
	logger   hclog.Logger
	notifier Notifier

	mu    sync.RWMutex // guards state, which Restore replaces
	state *state.StateStore
}

var _ raft.FSM = (*FSM)(nil)

// New returns an FSM over a new, empty state store. logger and n may be
// nil.
func New(logger hclog.Logger, n Notifier) (*FSM, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s, err := state.NewStateStore()
	if err != nil {
		return nil, err
	}
	return &FSM{logger: logger.Named("fsm"), notifier: n, state: s}, nil
}

// State returns the current state store. After a Restore it is a new one
// and the old one's AbandonCh is closed.
func (f *FSM) State() *state.StateStore {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state
}

// Apply applies one committed log entry and returns nil or an error.
// An unknown message type panics, unless it carries
// structs.IgnoreUnknownTypeFlag: a server that cannot apply an entry its
// peers applied would silently diverge.
func (f *FSM) Apply(log *raft.Log) any {
	if len(log.Data) == 0 {
		return fmt.Errorf("apply index %d: empty entry", log.Index)
	}
	msgType := structs.MessageType(log.Data[0])
	ignoreUnknown := msgType&structs.IgnoreUnknownTypeFlag != 0
	msgType &^= structs.IgnoreUnknownTypeFlag
	buf, index := log.Data[1:], log.Index

	switch msgType {
	case structs.NodeRegisterRequestType:
		return f.applyNodeRegister(buf, index)
	case structs.NodeUpdateStatusRequestType:
		return f.applyNodeUpdateStatus(buf, index)
	case structs.NodeDeregisterRequestType:
		return f.applyNodeDeregister(buf, index)
	case structs.JobRegisterRequestType:
		return f.applyJobRegister(buf, index)
	case structs.JobDeregisterRequestType:
		return f.applyJobDeregister(buf, index)
	case structs.EvalUpdateRequestType:
		return f.applyEvalUpdate(buf, index)
	case structs.AllocClientUpdateRequestType:
		return f.applyAllocClientUpdate(buf, index)
	case structs.ApplyPlanResultsRequestType:
		return f.applyPlanResults(buf, index)
	}
	if ignoreUnknown {
		f.logger.Warn("ignoring unknown message type", "type", msgType, "index", index)
		return nil
	}
	panic(fmt.Sprintf("fsm: unknown message type %d at index %d", msgType, index))
}

func (f *FSM) applyNodeRegister(buf []byte, index uint64) any {
	var req structs.NodeRegisterRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decode node register: %w", err)
	}
	s := f.State()
	if err := s.UpsertNode(index, req.Node); err != nil {
		return err
	}
	if err := f.upsertEvals(s, index, req.Evals); err != nil {
		return err
	}
	f.capacityChanged(index)
	return nil
}

func (f *FSM) applyNodeUpdateStatus(buf []byte, index uint64) any {
	var req structs.NodeUpdateStatusRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decode node status update: %w", err)
	}
	s := f.State()
	prev, err := s.NodeByID(nil, req.NodeID)
	if err != nil {
		return err
	}
	if err := s.UpdateNodeStatus(index, req.NodeID, req.Status, req.UpdatedAt); err != nil {
		return err
	}
	if err := f.upsertEvals(s, index, req.Evals); err != nil {
		return err
	}
	if req.Status == structs.NodeStatusReady && prev.Status != structs.NodeStatusReady {
		f.capacityChanged(index)
	}
	return nil
}

func (f *FSM) applyNodeDeregister(buf []byte, index uint64) any {
	var req structs.NodeDeregisterRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decode node deregister: %w", err)
	}
	return f.State().DeleteNode(index, req.NodeID)
}

func (f *FSM) applyJobRegister(buf []byte, index uint64) any {
	var req structs.JobRegisterRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decode job register: %w", err)
	}
	s := f.State()
	if err := s.UpsertJob(index, req.Job); err != nil {
		return err
	}
	return f.upsertEval(s, index, req.Eval)
}

func (f *FSM) applyJobDeregister(buf []byte, index uint64) any {
	var req structs.JobDeregisterRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decode job deregister: %w", err)
	}
	s := f.State()
	if err := deregisterJob(s, index, req.Namespace, req.JobID, req.Purge); err != nil {
		return err
	}
	return f.upsertEval(s, index, req.Eval)
}

// deregisterJob purges the job, or stops it (a copy with Stop set). An
// unknown job is left alone.
func deregisterJob(s *state.StateStore, index uint64, namespace, jobID string, purge bool) error {
	if purge {
		return s.DeleteJob(index, namespace, jobID)
	}
	job, err := s.JobByID(nil, namespace, jobID)
	if err != nil || job == nil {
		return err
	}
	stopped := job.Copy()
	stopped.Stop = true
	return s.UpsertJob(index, stopped)
}

func (f *FSM) applyEvalUpdate(buf []byte, index uint64) any {
	var req structs.EvalUpdateRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decode eval update: %w", err)
	}
	return f.upsertEvals(f.State(), index, req.Evals)
}

func (f *FSM) applyAllocClientUpdate(buf []byte, index uint64) any {
	var req structs.AllocUpdateRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decode alloc client update: %w", err)
	}
	s := f.State()
	finished, err := newlyClientTerminal(s, req.Alloc)
	if err != nil {
		return err
	}
	if err := s.UpdateAllocsFromClient(index, req.Alloc); err != nil {
		return err
	}
	if err := f.upsertEvals(s, index, req.Evals); err != nil {
		return err
	}
	if finished {
		f.capacityChanged(index)
	}
	return nil
}

// newlyClientTerminal reports whether an update finishes an allocation
// that its client had not finished yet.
func newlyClientTerminal(s *state.StateStore, updates []*structs.Allocation) (bool, error) {
	for _, u := range updates {
		if !u.ClientTerminalStatus() {
			continue
		}
		existing, err := s.AllocByID(nil, u.ID)
		if err != nil {
			return false, err
		}
		if existing != nil && !existing.ClientTerminalStatus() {
			return true, nil
		}
	}
	return false, nil
}

func (f *FSM) applyPlanResults(buf []byte, index uint64) any {
	var req structs.ApplyPlanResultsRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decode plan results: %w", err)
	}
	if err := f.State().UpsertAllocs(index, req.Allocs); err != nil {
		return err
	}
	for _, a := range req.Allocs {
		if a.DesiredStatus == structs.AllocDesiredStatusStop {
			f.capacityChanged(index)
			break
		}
	}
	return nil
}

func (f *FSM) upsertEval(s *state.StateStore, index uint64, eval *structs.Evaluation) error {
	if eval == nil {
		return nil
	}
	return f.upsertEvals(s, index, []*structs.Evaluation{eval})
}

// upsertEvals writes evals and passes copies of what was stored (indexes
// stamped) to the notifier.
func (f *FSM) upsertEvals(s *state.StateStore, index uint64, evals []*structs.Evaluation) error {
	if len(evals) == 0 {
		return nil
	}
	if err := s.UpsertEvals(index, evals); err != nil {
		return err
	}
	if f.notifier == nil {
		return nil
	}
	stored := make([]*structs.Evaluation, 0, len(evals))
	for _, e := range evals {
		got, err := s.EvalByID(nil, e.ID)
		if err != nil {
			return err
		}
		if got != nil {
			stored = append(stored, got.Copy())
		}
	}
	f.notifier.EvalsUpserted(stored)
	return nil
}

func (f *FSM) capacityChanged(index uint64) {
	if f.notifier != nil {
		f.notifier.CapacityChanged(index)
	}
}
