package server

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// allocEndpoint serves the "Alloc" RPC methods.
type allocEndpoint struct{ srv *Server }

// Stop sets a live allocation's desired status to stop and creates an
// evaluation of its job, so that its client kills it and the scheduler
// places a replacement (an allocation stopped this way is not a failure:
// the replacement is not delayed by the reschedule policy).
//
// It commits two Raft entries, as no request type carries both an
// allocation update and an evaluation: the stop first, as the plan
// applier commits it (ApplyPlanResultsRequestType), then the evaluation
// (EvalUpdateRequestType), so the scheduler always sees the stop. Should
// the leader fail in between, the allocation is stopped and its
// replacement waits for the job's next evaluation.
func (e *allocEndpoint) Stop(args *structs.AllocStopRequest, reply *structs.AllocStopResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCAllocStop, &err)
	if done, err := s.forward(structs.RPCAllocStop, args, reply); done {
		return err
	}
	if _, err := s.anyNS(args.AuthToken, acl.CapAllocLifecycle); err != nil {
		return err
	}
	if args.AllocID == "" {
		return fmt.Errorf("stop allocation: missing allocation ID: %w", structs.ErrInvalid)
	}
	alloc, err := s.State().AllocByID(nil, args.AllocID)
	if err != nil {
		return fmt.Errorf("stop allocation %s: %w", args.AllocID, err)
	}
	if alloc == nil {
		return fmt.Errorf("allocation %s: %w", args.AllocID, structs.ErrNotFound)
	}
	if err := s.allowNS(args.AuthToken, alloc.Namespace, acl.CapAllocLifecycle); err != nil {
		return err
	}
	if alloc.TerminalStatus() {
		return fmt.Errorf("allocation %s is not running (desired %s, client %s): %w",
			alloc.ID, alloc.DesiredStatus, alloc.ClientStatus, structs.ErrInvalid)
	}
	job, err := s.State().JobByID(nil, alloc.Namespace, alloc.JobID)
	if err != nil {
		return fmt.Errorf("stop allocation %s: read job: %w", alloc.ID, err)
	}
	if job == nil {
		job = alloc.Job
	}
	now := time.Now().UnixNano()
	eval := newJobEval(job, structs.EvalTriggerAllocStop, now)

	stopped := alloc.Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	stopped.DesiredDescription = structs.AllocStopDescription
	stopped.ModifyTime = now
	stopped.Job = nil // a stop keeps the job the allocation has in state
	stop := &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{stopped}, EvalID: eval.ID, WriteRequest: args.WriteRequest}
	if _, err := s.raftApply(structs.ApplyPlanResultsJobOnceRequestType, stop); err != nil {
		return fmt.Errorf("stop allocation %s: %w", alloc.ID, err)
	}
	index, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}, WriteRequest: args.WriteRequest})
	if err != nil {
		return fmt.Errorf("stop allocation %s: create eval: %w", alloc.ID, err)
	}
	reply.EvalID = eval.ID
	reply.Index = index
	return nil
}
