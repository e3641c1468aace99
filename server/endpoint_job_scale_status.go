package server

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// ScaleStatus reads a job's groups' desired and actual counts
// (read-job), blocking on the job and its allocations.
func (e *jobEndpoint) ScaleStatus(args *structs.JobSpecificRequest, reply *structs.JobScaleStatusResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobScaleStatus, &err)
	if done, err := s.forward(structs.RPCJobScaleStatus, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	if err := s.allowNS(args.AuthToken, ns, acl.CapReadJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return errMissing(structs.RPCJobScaleStatus, "job ID")
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		job, err := jobOf(ws, st, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		allocs, err := st.AllocsByJob(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.JobScaleStatus = structs.NewJobScaleStatus(job, allocs)
		return tablesIndex(st, []string{state.TableJobs, state.TableAllocs})
	})
}
