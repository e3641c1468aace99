package server

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// jobEndpoint serves the "Job" RPC methods.
type jobEndpoint struct{ srv *Server }

// Register validates and stores a job with a pending evaluation, in one
// Raft entry. With EnforceIndex it is check-and-set: the FSM applies it
// only if the job's JobModifyIndex is still JobModifyIndex, and refuses
// it with structs.ErrConflict otherwise.
func (e *jobEndpoint) Register(args *structs.JobRegisterRequest, reply *structs.JobRegisterResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobRegister, &err)
	if done, err := s.forward(structs.RPCJobRegister, args, reply); done {
		return err
	}
	if err := s.authorizeSubmit(args.AuthToken, args.Job); err != nil {
		return err
	}
	if args.Job != nil { // the server's clock decides it, never the caller (Nomad's)
		c := *args
		c.Job = args.Job.Copy()
		c.Job.SubmitTime = s.periodicClock().Now().UnixNano() // the wall clock but in tests
		args = &c
	}
	return s.registerJob(args, reply)
}

// registerJob is Job.Register on the leader.
func (s *Server) registerJob(args *structs.JobRegisterRequest, reply *structs.JobRegisterResponse) error {
	if args.Job == nil {
		return fmt.Errorf("register job: missing job: %w", structs.ErrInvalid)
	}
	job, err := s.checkJob(args.Job) // endpoint_job_validate.go
	if err != nil {
		return err
	}
	if args.EnforceIndex {
		// Refused early when it already conflicts; the FSM checks again
		// when the entry applies, which is what makes it race-free.
		cur, err := s.State().JobByID(nil, job.Namespace, job.ID)
		if err != nil {
			return fmt.Errorf("register job %q: %w", job.ID, err)
		}
		if err := structs.EnforceJobModifyIndex(cur, args.JobModifyIndex); err != nil {
			return err
		}
	}
	now := time.Now().UnixNano()
	if job.SubmitTime == 0 {
		job.SubmitTime = now
	}
	var eval *structs.Evaluation
	if !job.IsParent() { // a periodic or parameterized parent only makes children (server/periodic.go)
		eval = newJobEval(job, structs.EvalTriggerJobRegister, now)
	}
	req := &structs.JobRegisterRequest{
		Job: job, Eval: eval, EnforceIndex: args.EnforceIndex, JobModifyIndex: args.JobModifyIndex,
		WriteRequest: args.WriteRequest,
	}
	index, err := s.raftApply(structs.JobRegisterRequestType, req)
	if errors.Is(err, structs.ErrConflict) {
		return err // Nomad's text, as it is
	}
	if err != nil {
		return fmt.Errorf("register job %q: %w", job.ID, err)
	}
	if eval != nil {
		reply.EvalID = eval.ID
		reply.EvalCreateIndex = index
	}
	reply.JobModifyIndex = index
	reply.Warnings = strings.Join(job.Warnings(), "\n")
	if stored, err := s.State().JobByID(nil, job.Namespace, job.ID); err == nil && stored != nil {
		reply.JobModifyIndex = stored.JobModifyIndex
	}
	reply.Index = index
	reply.KnownLeader = true
	return nil
}

// Deregister stops a job (or purges it) with a pending evaluation that
// stops its allocations.
func (e *jobEndpoint) Deregister(args *structs.JobDeregisterRequest, reply *structs.JobDeregisterResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobDeregister, &err)
	if done, err := s.forward(structs.RPCJobDeregister, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, writeNamespace(args.WriteRequest), acl.CapSubmitJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return fmt.Errorf("deregister job: missing job ID: %w", structs.ErrInvalid)
	}
	ns := args.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	job, err := s.State().JobByID(nil, ns, args.JobID)
	if err != nil {
		return fmt.Errorf("deregister job %q: %w", args.JobID, err)
	}
	if job == nil {
		return fmt.Errorf("job %q in namespace %q: %w", args.JobID, ns, structs.ErrNotFound)
	}
	var eval *structs.Evaluation
	if !job.IsParent() { // a parent has no allocations to stop (Nomad's)
		eval = newJobEval(job, structs.EvalTriggerJobDeregister, time.Now().UnixNano())
	}
	req := &structs.JobDeregisterRequest{JobID: job.ID, Purge: args.Purge, Eval: eval, WriteRequest: args.WriteRequest}
	req.Namespace = ns
	index, err := s.raftApply(structs.JobDeregisterRequestType, req)
	if err != nil {
		return fmt.Errorf("deregister job %q: %w", job.ID, err)
	}
	if eval != nil {
		reply.EvalID = eval.ID
		reply.EvalCreateIndex = index
	}
	reply.JobModifyIndex = index
	reply.Index = index
	reply.KnownLeader = true
	return nil
}

// newJobEval returns a pending evaluation of job.
func newJobEval(job *structs.Job, trigger string, now int64) *structs.Evaluation {
	return &structs.Evaluation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
		TriggeredBy: trigger, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
		Status: structs.EvalStatusPending, CreateTime: now, ModifyTime: now,
	}
}
