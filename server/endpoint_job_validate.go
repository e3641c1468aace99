package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/structs"
)

// Validate checks a job as Register does and stores nothing (read-job in
// the job's namespace: a reader may check a job, only a submitter run
// it). Why a job is invalid is in the reply.
func (e *jobEndpoint) Validate(args *structs.JobValidateRequest, reply *structs.JobValidateResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobValidate, &err)
	if done, err := s.forward(structs.RPCJobValidate, args, reply); done {
		return err
	}
	ns := writeNamespace(args.WriteRequest)
	if args.Job != nil && args.Job.Namespace != "" {
		ns = args.Job.Namespace
	}
	if err := s.allowNS(args.AuthToken, ns, acl.CapReadJob); err != nil {
		return err
	}
	if args.Job == nil {
		return errMissing(structs.RPCJobValidate, "job")
	}
	job, err := s.checkJob(args.Job)
	if err != nil {
		reply.Error = err.Error()
		for _, line := range strings.Split(err.Error(), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				reply.ValidationErrors = append(reply.ValidationErrors, line)
			}
		}
		return nil
	}
	reply.Warnings = strings.Join(job.Warnings(), "\n")
	return nil
}

// checkJob is what Register checks of a job before it stores it: shape,
// limits, the canonical job's validity, that its namespace and queue
// exist and that the scheduler runs its type. It returns the canonical
// copy.
func (s *Server) checkJob(in *structs.Job) (*structs.Job, error) {
	if err := in.CheckShape(); err != nil {
		return nil, err
	}
	if err := in.CheckLimits(s.config.Limits); err != nil {
		return nil, err
	}
	job := in.Copy()
	job.Canonicalize()
	if err := job.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", structs.ErrInvalid, err)
	}
	if err := s.checkNamespace(job.Namespace); err != nil { // endpoint_namespace.go
		return nil, err
	}
	if err := s.checkQueue(job.Queue); err != nil { // endpoint_queue.go
		return nil, err
	}
	// The job types accepted are those the scheduler supports.
	if _, err := scheduler.New(job.Type, nil, nil, nil); errors.Is(err, scheduler.ErrNotSupported) {
		return nil, fmt.Errorf("job %q: type %s is not supported yet: %w", job.ID, job.Type, structs.ErrInvalid)
	}
	return job, nil
}
