package server

import (
	"errors"
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// GetJobVersions returns a job's stored versions, newest first, with
// each one's diff against the version before it when Diffs is set
// (read-job). An unknown job is structs.ErrNotFound.
func (e *jobEndpoint) GetJobVersions(args *structs.JobVersionsRequest, reply *structs.JobVersionsResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobVersions, &err)
	if done, err := s.forward(structs.RPCJobVersions, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, queryNamespace(args.QueryOptions), acl.CapReadJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return errMissing(structs.RPCJobVersions, "job ID")
	}
	ns := queryNamespace(args.QueryOptions)
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		versions, err := st.JobVersions(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		if len(versions) == 0 {
			return 0, structs.KindErrorf(structs.ErrNotFound, "job %q not found", args.JobID)
		}
		reply.Versions, reply.Diffs = versions, nil
		if args.Diffs {
			for i := 0; i+1 < len(versions); i++ {
				reply.Diffs = append(reply.Diffs, structs.DiffJobs(versions[i+1], versions[i]))
			}
		}
		var index uint64
		for _, v := range versions {
			index = max(index, v.ModifyIndex)
		}
		return index, nil
	})
}

// Revert registers a stored version of a job again, as its next version,
// with a new evaluation (submit-job). With EnforcePriorVersion it is
// refused unless the job is still at that version; reverting to the
// current version is refused, as in Nomad.
func (e *jobEndpoint) Revert(args *structs.JobRevertRequest, reply *structs.JobRegisterResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobRevert, &err)
	if done, err := s.forward(structs.RPCJobRevert, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, writeNamespace(args.WriteRequest), acl.CapSubmitJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return errMissing(structs.RPCJobRevert, "job ID")
	}
	req, err := s.revertedJob(writeNamespace(args.WriteRequest), args)
	if err != nil {
		return err
	}
	if err := s.authorizeSubmit(args.AuthToken, req.Job); err != nil {
		return err
	}
	req.WriteRequest = args.WriteRequest
	return s.registerJob(req, reply)
}

// revertedJob is the check-and-set registration of the version args
// names, computed from the current job.
func (s *Server) revertedJob(ns string, args *structs.JobRevertRequest) (*structs.JobRegisterRequest, error) {
	cur, err := s.State().JobByID(nil, ns, args.JobID)
	if err != nil {
		return nil, fmt.Errorf("revert job %q: %w", args.JobID, err)
	}
	if cur == nil {
		return nil, structs.KindErrorf(structs.ErrNotFound, "job %q not found", args.JobID)
	}
	if p := args.EnforcePriorVersion; p != nil && *p != cur.Version {
		return nil, structs.KindErrorf(structs.ErrConflict, "current job has version %d; enforcing version %d", cur.Version, *p)
	}
	if args.JobVersion == cur.Version {
		return nil, structs.KindErrorf(structs.ErrInvalid, "can't revert to current version")
	}
	old, err := s.State().JobByIDAndVersion(nil, ns, args.JobID, args.JobVersion)
	if err != nil {
		return nil, fmt.Errorf("revert job %q: %w", args.JobID, err)
	}
	if old == nil {
		return nil, structs.KindErrorf(structs.ErrNotFound, "job %q has no version %d", args.JobID, args.JobVersion)
	}
	job := old.Copy()
	job.SubmitTime = 0
	return &structs.JobRegisterRequest{Job: job, EnforceIndex: true, JobModifyIndex: cur.JobModifyIndex}, nil
}

// Stable sets the Stable flag of one version of a job (submit-job).
func (e *jobEndpoint) Stable(args *structs.JobStabilityRequest, reply *structs.JobStabilityResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobStable, &err)
	if done, err := s.forward(structs.RPCJobStable, args, reply); done {
		return err
	}
	ns := writeNamespace(args.WriteRequest)
	if err := s.allowNS(args.AuthToken, ns, acl.CapSubmitJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return errMissing(structs.RPCJobStable, "job ID")
	}
	v, err := s.State().JobByIDAndVersion(nil, ns, args.JobID, args.JobVersion)
	if err != nil {
		return fmt.Errorf("job %q stability: %w", args.JobID, err)
	}
	if v == nil {
		return structs.KindErrorf(structs.ErrNotFound, "job %q has no version %d", args.JobID, args.JobVersion)
	}
	req := *args
	req.Namespace = ns
	index, err := s.raftApply(structs.JobStabilityRequestType, &req)
	if errors.Is(err, structs.ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("job %q stability: %w", args.JobID, err)
	}
	reply.JobModifyIndex, reply.Index = index, index
	return nil
}
