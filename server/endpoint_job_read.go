package server

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// List returns the stubs, with summaries, of the jobs of the request's
// namespace ("*" for all) whose ID starts with Prefix, sorted by ID. Its
// index is the higher of the jobs' and allocations' tables (a summary
// changes with the allocations).
func (e *jobEndpoint) List(args *structs.JobListRequest, reply *structs.JobListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobList, &err)
	if done, err := s.forward(structs.RPCJobList, args, reply); done {
		return err
	}
	keep, err := s.nsFilter(args.AuthToken, queryNamespace(args.QueryOptions), acl.CapListJobs)
	if err != nil {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		jobs, err := st.JobsByIDPrefix(ws, ns, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Jobs = make([]*structs.JobListStub, 0, len(jobs))
		for _, j := range jobs {
			if !keep(j.Namespace) {
				continue
			}
			sum, err := st.JobSummary(ws, j.Namespace, j.ID)
			if err != nil {
				return 0, err
			}
			reply.Jobs = append(reply.Jobs, j.Stub(sum))
		}
		return tablesIndex(st, []string{state.TableJobs, state.TableAllocs})
	})
}

// GetJob returns one job of the request's namespace (structs.ErrNotFound
// when there is none); its index is the job's ModifyIndex.
func (e *jobEndpoint) GetJob(args *structs.JobSpecificRequest, reply *structs.SingleJobResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobGetJob, &err)
	if done, err := s.forward(structs.RPCJobGetJob, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, queryNamespace(args.QueryOptions), acl.CapReadJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return errMissing(structs.RPCJobGetJob, "job ID")
	}
	ns := queryNamespace(args.QueryOptions)
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		job, err := jobOf(ws, st, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Job = job.Copy()
		return job.ModifyIndex, nil
	})
}

// jobOf reads a job that must exist.
func jobOf(ws memdb.WatchSet, st *state.StateStore, ns, id string) (*structs.Job, error) {
	job, err := st.JobByID(ws, ns, id)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, structs.KindErrorf(structs.ErrNotFound, "job %q not found", id)
	}
	return job, nil
}

// Allocations returns the stubs of the job's allocations, terminal ones
// included ([] for an unknown job). Its index is their newest
// ModifyIndex, or the allocations' table's when there are none.
func (e *jobEndpoint) Allocations(args *structs.JobSpecificRequest, reply *structs.JobAllocationsResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobAllocations, &err)
	if done, err := s.forward(structs.RPCJobAllocations, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, queryNamespace(args.QueryOptions), acl.CapReadJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return errMissing(structs.RPCJobAllocations, "job ID")
	}
	ns := queryNamespace(args.QueryOptions)
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByJob(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Allocations = allocStubs(allocs)
		return newestIndex(st, state.TableAllocs, allocs, func(a *structs.Allocation) uint64 { return a.ModifyIndex })
	})
}

// Evaluations returns the job's evaluations ([] for an unknown job). Its
// index is their newest ModifyIndex, or the evaluations' table's when
// there are none.
func (e *jobEndpoint) Evaluations(args *structs.JobSpecificRequest, reply *structs.JobEvaluationsResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobEvaluations, &err)
	if done, err := s.forward(structs.RPCJobEvaluations, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, queryNamespace(args.QueryOptions), acl.CapReadJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return errMissing(structs.RPCJobEvaluations, "job ID")
	}
	ns := queryNamespace(args.QueryOptions)
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		evals, err := st.EvalsByJob(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Evaluations = nonNil(evals)
		return newestIndex(st, state.TableEvals, evals, func(e *structs.Evaluation) uint64 { return e.ModifyIndex })
	})
}

// Summary returns the job's summary (structs.ErrNotFound for an unknown
// job). Its index is the highest of the jobs', allocations' and
// evaluations' tables.
func (e *jobEndpoint) Summary(args *structs.JobSpecificRequest, reply *structs.JobSummaryResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobSummary, &err)
	if done, err := s.forward(structs.RPCJobSummary, args, reply); done {
		return err
	}
	if err := s.allowNS(args.AuthToken, queryNamespace(args.QueryOptions), acl.CapReadJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return errMissing(structs.RPCJobSummary, "job ID")
	}
	ns := queryNamespace(args.QueryOptions)
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if _, err := jobOf(ws, st, ns, args.JobID); err != nil {
			return 0, err
		}
		sum, err := st.JobSummary(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.JobSummary = sum
		return tablesIndex(st, []string{state.TableJobs, state.TableAllocs, state.TableEvals})
	})
}
