package server

import (
	"errors"
	"fmt"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/structs"
)

// scaleAttempts bounds how often Job.Scale without EnforceIndex reads the
// job again after a concurrent change to it won the race.
const scaleAttempts = 5

// Scale sets the count of one group of a job and registers the result as
// Job.Register does (a new evaluation in the same Raft entry); a stopped
// job runs again. It is a read-modify-write on the leader made safe by
// check-and-set: the registration carries the JobModifyIndex of the job
// it was computed from, and the FSM applies it only if that is still the
// stored job's (fsm.enforceJobModifyIndex), so a registration that lands
// in between is never overwritten with the old spec. Then, without
// EnforceIndex, Scale reads the job again and retries; with it, the
// caller's index no longer matches and it fails with structs.ErrConflict.
func (e *jobEndpoint) Scale(args *structs.JobScaleRequest, reply *structs.JobRegisterResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobScale, &err)
	if done, err := s.forward(structs.RPCJobScale, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, writeNamespace(args.WriteRequest), acl.CapScaleJob); err != nil {
		return err
	}
	switch {
	case args.JobID == "":
		return errMissing(structs.RPCJobScale, "job ID")
	case args.Count == nil || *args.Count < 0:
		return structs.KindErrorf(structs.ErrInvalid, "scale: Count must be given and not negative")
	case args.Group == "":
		return structs.KindErrorf(structs.ErrInvalid, "scale: Target.Group is required")
	}
	for attempt := 1; ; attempt++ {
		req, err := s.scaledJob(args)
		if err != nil {
			return err
		}
		err = s.registerJob(req, reply)
		if err == nil {
			s.logger.Info("job scaled", "namespace", req.Job.Namespace, "job_id", args.JobID,
				"group", args.Group, "count", *args.Count, "message", args.Message)
			return nil
		}
		if args.EnforceIndex || !errors.Is(err, structs.ErrConflict) || attempt == scaleAttempts {
			return err
		}
	}
}

// scaledJob reads the job and returns its check-and-set registration
// with the group's new count.
func (s *Server) scaledJob(args *structs.JobScaleRequest) (*structs.JobRegisterRequest, error) {
	ns := args.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	cur, err := s.State().JobByID(nil, ns, args.JobID)
	if err != nil {
		return nil, fmt.Errorf("scale job %q: %w", args.JobID, err)
	}
	if cur == nil {
		return nil, structs.KindErrorf(structs.ErrNotFound, "job %q not found", args.JobID)
	}
	if args.EnforceIndex {
		if err := structs.EnforceJobModifyIndex(cur, args.JobModifyIndex); err != nil {
			return nil, err
		}
	}
	job := cur.Copy()
	tg := job.LookupTaskGroup(args.Group)
	if tg == nil {
		return nil, structs.KindErrorf(structs.ErrInvalid, "scale: job %q has no group %q", args.JobID, args.Group)
	}
	if err := tg.Scaling.CheckCount(int64(*args.Count)); err != nil {
		return nil, fmt.Errorf("scale job %q group %q: %w", args.JobID, args.Group, err)
	}
	if *args.Count > tg.Count || cur.Stop {
		// Growing the job is new work in its queue: what a submit of the
		// same spec needs is needed here too (endpoint_periodic.go).
		if err := s.authorizeDispatch(args.AuthToken, cur); err != nil {
			return nil, err
		}
	}
	tg.Count = *args.Count
	job.Stop = false
	if err := job.CheckLimits(s.config.Limits); err != nil {
		return nil, err
	}
	return &structs.JobRegisterRequest{
		Job: job, EnforceIndex: true, JobModifyIndex: cur.JobModifyIndex, WriteRequest: args.WriteRequest,
	}, nil
}
