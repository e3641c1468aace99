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

	mu    sync.RWMutex // guards state, which Restore replaces, and events
	state *state.StateStore
	// events, when set, gets the events of each entry applied (events.go).
	events EventSink
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
// Each entry is one state store transaction: readers see all of its
// writes or none. An unknown message type panics, unless it carries
// structs.IgnoreUnknownTypeFlag: a server that cannot apply an entry its
// peers applied would silently diverge. A known entry that cannot be
// applied (bad data that slipped past the endpoints) is an error, never a
// crash: every server would crash on it again when replaying the log.
func (f *FSM) Apply(log *raft.Log) any {
	if len(log.Data) == 0 {
		return fmt.Errorf("apply index %d: empty entry", log.Index)
	}
	msgType := structs.MessageType(log.Data[0])
	ignoreUnknown := msgType&structs.IgnoreUnknownTypeFlag != 0
	msgType &^= structs.IgnoreUnknownTypeFlag
	buf, index := log.Data[1:], log.Index

	apply := f.handler(msgType)
	if apply == nil {
		if ignoreUnknown {
			f.logger.Warn("ignoring unknown message type", "type", msgType, "index", index)
			return nil
		}
		panic(fmt.Sprintf("fsm: unknown message type %d at index %d", msgType, index))
	}
	result := f.safeApply(apply, msgType, buf, index)
	f.publishEvents(msgType, index, result)
	return result
}

// applyFn applies one decoded message type.
type applyFn func(buf []byte, index uint64) any

func (f *FSM) handler(t structs.MessageType) applyFn {
	switch t {
	case structs.NodeRegisterRequestType:
		return f.applyNodeRegister
	case structs.NodeUpdateStatusRequestType:
		return func(buf []byte, index uint64) any { return f.applyNodeUpdateStatus(buf, index, false) }
	case structs.NodeUpdateStatusLosingRequestType:
		return func(buf []byte, index uint64) any { return f.applyNodeUpdateStatus(buf, index, true) }
	case structs.NodeDeregisterRequestType:
		return f.applyNodeDeregister
	case structs.JobRegisterRequestType:
		return f.applyJobRegister
	case structs.JobDeregisterRequestType:
		return f.applyJobDeregister
	case structs.EvalUpdateRequestType:
		return f.applyEvalUpdate
	case structs.AllocClientUpdateRequestType:
		return f.applyAllocClientUpdate
	case structs.ApplyPlanResultsRequestType, structs.ApplyPlanResultsJobOnceRequestType,
		structs.ApplyPlanResultsDeploymentRequestType:
		return f.applyPlanResults
	case structs.SchedulerConfigRequestType:
		return f.applySchedulerConfig
	case structs.NamespaceUpsertRequestType:
		return f.applyNamespaceUpsert
	case structs.NamespaceDeleteRequestType:
		return f.applyNamespaceDelete
	case structs.QuotaUpsertRequestType:
		return f.applyQuotaUpsert
	case structs.QuotaDeleteRequestType:
		return f.applyQuotaDelete
	case structs.QueueUpsertRequestType:
		return f.applyQueueUpsert
	case structs.QueueDeleteRequestType:
		return f.applyQueueDelete
	case structs.ACLPolicyUpsertRequestType:
		return f.applyACLPolicyUpsert
	case structs.ACLPolicyDeleteRequestType:
		return f.applyACLPolicyDelete
	case structs.ACLTokenUpsertRequestType:
		return f.applyACLTokenUpsert
	case structs.ACLTokenDeleteRequestType:
		return f.applyACLTokenDelete
	case structs.ACLTokenBootstrapType:
		return f.applyACLBootstrap
	case structs.PeriodicLaunchUpsertRequestType:
		return f.applyPeriodicLaunch
	case structs.GarbageCollectRequestType:
		return f.applyGarbageCollect
	case structs.ServiceRegistrationUpsertRequestType: // service.go
		return f.applyServiceRegistrationUpsert
	case structs.ServiceRegistrationDeleteByIDRequestType:
		return f.applyServiceRegistrationDeleteByID
	case structs.ServiceRegistrationDeleteByAllocRequestType:
		return f.applyServiceRegistrationDeleteByAlloc
	case structs.VariableUpsertRequestType:
		return f.applyVariableUpsert
	case structs.VariableDeleteRequestType:
		return f.applyVariableDelete
	case structs.RootKeyMetaUpsertRequestType:
		return f.applyRootKeyMetaUpsert
	case structs.NodeUpdateEligibilityRequestType:
		return f.applyNodeEligibility // node_eligibility.go
	case structs.JobStabilityRequestType:
		return f.applyJobStability // job_version.go
	case structs.DeploymentStatusUpdateRequestType:
		return f.applyDeploymentStatusUpdate // deployment.go
	case structs.DeploymentPromoteRequestType:
		return f.applyDeploymentPromote // deployment.go
	}
	return nil
}

// safeApply runs apply, turning a panic into an error. The state store
// transaction it was in is aborted, so the entry changes nothing.
func (f *FSM) safeApply(apply applyFn, t structs.MessageType, buf []byte, index uint64) (result any) {
	defer func() {
		if r := recover(); r != nil {
			f.logger.Error("entry could not be applied", "type", t, "index", index, "panic", r)
			result = fmt.Errorf("apply index %d (type %d): %v", index, t, r)
		}
	}()
	return apply(buf, index)
}

func (f *FSM) applyNodeRegister(buf []byte, index uint64) any {
	var req structs.NodeRegisterRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode node register: %w", err)
	}
	s := f.State()
	err := s.Write(index, func(tx *state.Txn) error {
		if err := tx.UpsertNode(req.Node); err != nil {
			return err
		}
		return tx.UpsertEvals(req.Evals)
	})
	if err != nil {
		return err
	}
	f.evalsUpserted(s, req.Evals)
	f.capacityChanged(index)
	return nil
}

// applyNodeUpdateStatus applies a node's status; with lose (entries of
// NodeUpdateStatusLosingRequestType), a node going down has its stopped
// allocations that never finished marked lost.
func (f *FSM) applyNodeUpdateStatus(buf []byte, index uint64, lose bool) any {
	var req structs.NodeUpdateStatusRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode node status update: %w", err)
	}
	s := f.State()
	becameReady := false
	err := s.Write(index, func(tx *state.Txn) error {
		prev, err := tx.NodeByID(req.NodeID)
		if err != nil {
			return err
		}
		if err := tx.UpdateNodeStatus(req.NodeID, req.Status, req.UpdatedAt); err != nil {
			return err
		}
		if lose && req.Status == structs.NodeStatusDown && prev.Status != structs.NodeStatusDown {
			if err := tx.LoseStoppedAllocs(req.NodeID, req.UpdatedAt); err != nil {
				return err
			}
			if err := tx.MarkDisconnectedAllocs(req.NodeID, req.UpdatedAt); err != nil {
				return err
			}
		}
		becameReady = req.Status == structs.NodeStatusReady && prev.Status != structs.NodeStatusReady
		return tx.UpsertEvals(req.Evals)
	})
	if err != nil {
		return err
	}
	f.evalsUpserted(s, req.Evals)
	if becameReady {
		f.capacityChanged(index)
	}
	return nil
}

func (f *FSM) applyNodeDeregister(buf []byte, index uint64) any {
	var req structs.NodeDeregisterRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode node deregister: %w", err)
	}
	return f.State().DeleteNode(index, req.NodeID)
}

func (f *FSM) applyJobRegister(buf []byte, index uint64) any {
	var req structs.JobRegisterRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode job register: %w", err)
	}
	s := f.State()
	evals := evalList(req.Eval)
	err := s.Write(index, func(tx *state.Txn) error {
		if err := enforceJobModifyIndex(tx, &req); err != nil {
			return err
		}
		if err := tx.UpsertJob(req.Job); err != nil {
			return err
		}
		return tx.UpsertEvals(evals)
	})
	if err != nil {
		return err
	}
	f.evalsUpserted(s, evals)
	return nil
}

// enforceJobModifyIndex refuses a check-and-set registration whose
// index no longer matches the stored job's. It runs in the entry's
// transaction: entries apply one at a time, so no other write comes
// between the check and the registration, on any server.
func enforceJobModifyIndex(tx *state.Txn, req *structs.JobRegisterRequest) error {
	if !req.EnforceIndex || req.Job == nil {
		return nil
	}
	cur, err := tx.JobByID(req.Job.Namespace, req.Job.ID)
	if err != nil {
		return err
	}
	return structs.EnforceJobModifyIndex(cur, req.JobModifyIndex)
}

func (f *FSM) applyJobDeregister(buf []byte, index uint64) any {
	var req structs.JobDeregisterRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode job deregister: %w", err)
	}
	s := f.State()
	evals := evalList(req.Eval)
	err := s.Write(index, func(tx *state.Txn) error {
		if err := deregisterJob(tx, req.Namespace, req.JobID, req.Purge); err != nil {
			return err
		}
		return tx.UpsertEvals(evals)
	})
	if err != nil {
		return err
	}
	f.evalsUpserted(s, evals)
	return nil
}

// deregisterJob purges the job, or stops it (a copy with Stop set). An
// unknown job is left alone.
func deregisterJob(tx *state.Txn, namespace, jobID string, purge bool) error {
	if purge {
		return tx.DeleteJob(namespace, jobID)
	}
	job, err := tx.JobByID(namespace, jobID)
	if err != nil || job == nil {
		return err
	}
	stopped := job.Copy()
	stopped.Stop = true
	return tx.UpsertJob(stopped)
}

func (f *FSM) applyEvalUpdate(buf []byte, index uint64) any {
	var req structs.EvalUpdateRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode eval update: %w", err)
	}
	s := f.State()
	if err := s.UpsertEvals(index, req.Evals); err != nil {
		return err
	}
	f.evalsUpserted(s, req.Evals)
	return nil
}

func (f *FSM) applyAllocClientUpdate(buf []byte, index uint64) any {
	var req structs.AllocUpdateRequest
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode alloc client update: %w", err)
	}
	s := f.State()
	finished := false
	err := s.Write(index, func(tx *state.Txn) error {
		var err error
		if finished, err = newlyClientTerminal(tx, req.Alloc); err != nil {
			return err
		}
		if err := tx.UpdateAllocsFromClient(req.Alloc); err != nil {
			return err
		}
		return tx.UpsertEvals(req.Evals)
	})
	if err != nil {
		return err
	}
	f.evalsUpserted(s, req.Evals)
	if finished {
		f.capacityChanged(index)
	}
	return nil
}

// newlyClientTerminal reports whether an update finishes an allocation
// that its client had not finished yet.
func newlyClientTerminal(tx *state.Txn, updates []*structs.Allocation) (bool, error) {
	for _, u := range updates {
		if u == nil || !u.ClientTerminalStatus() {
			continue
		}
		existing, err := tx.AllocByID(u.ID)
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
	if err := structs.DecodeEntry(buf, &req); err != nil {
		return fmt.Errorf("decode plan results: %w", err)
	}
	s := f.State()
	err := s.Write(index, func(tx *state.Txn) error {
		if err := tx.ApplyPlanDeployments(&req); err != nil { // state/deployments.go
			return err
		}
		if err := tx.UpsertPlanAllocs(&req); err != nil {
			return err
		}
		if err := tx.UpsertEvals(req.PreemptionEvals); err != nil {
			return err
		}
		if err := tx.UpsertEvals(evalList(req.EvalUpdate)); err != nil {
			return err
		}
		if req.ReleaseReservation {
			if err := tx.DeleteReservation(req.Namespace, req.JobID); err != nil {
				return err
			}
		}
		if req.Reservation != nil {
			return tx.UpsertReservation(req.Reservation)
		}
		return nil
	})
	if err != nil {
		return err
	}
	f.evalsUpserted(s, append(req.PreemptionEvals, evalList(req.EvalUpdate)...))
	if req.ReleaseReservation {
		// GPUs a gang held are free to others again.
		f.capacityChanged(index)
	}
	for _, a := range append(req.AllocsStopped, req.Allocs...) {
		if a.DesiredStatus == structs.AllocDesiredStatusStop {
			f.capacityChanged(index)
			break
		}
	}
	return nil
}

func evalList(eval *structs.Evaluation) []*structs.Evaluation {
	if eval == nil {
		return nil
	}
	return []*structs.Evaluation{eval}
}

// evalsUpserted passes copies of the evaluations as stored (indexes
// stamped) to the notifier, once their transaction has committed.
func (f *FSM) evalsUpserted(s *state.StateStore, evals []*structs.Evaluation) {
	if f.notifier == nil || len(evals) == 0 {
		return
	}
	stored := make([]*structs.Evaluation, 0, len(evals))
	for _, e := range evals {
		got, err := s.EvalByID(nil, e.ID)
		if err != nil {
			// Not expected from an in-memory read; the eval is in state,
			// where the next leader's restore finds it.
			f.logger.Error("read back evaluation", "eval_id", e.ID, "error", err)
			continue
		}
		if got != nil {
			stored = append(stored, got.Copy())
		}
	}
	f.notifier.EvalsUpserted(stored)
}

func (f *FSM) capacityChanged(index uint64) {
	if f.notifier != nil {
		f.notifier.CapacityChanged(index)
	}
}
