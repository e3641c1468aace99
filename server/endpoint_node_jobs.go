package server

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// JobsExist answers a node's client which of some jobs still exist, so
// that its GC removes the checkpoint dirs of purged jobs only. It is a
// node call (the node's secret), not a user's: it tells the node nothing
// but whether each job it names exists, at most MaxJobsExist at a time.
func (e *nodeEndpoint) JobsExist(args *structs.NodeJobsExistRequest, reply *structs.NodeJobsExistResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCNodeJobsExist, &err)
	if done, err := s.forward(structs.RPCNodeJobsExist, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return fmt.Errorf("jobs exist: missing node ID: %w", structs.ErrInvalid)
	}
	if err := s.authorizeNode(structs.RPCNodeJobsExist, args.NodeID, args.SecretID); err != nil {
		return err
	}
	if len(args.Jobs) > structs.MaxJobsExist {
		return fmt.Errorf("jobs exist: %d jobs, at most %d: %w", len(args.Jobs), structs.MaxJobsExist, structs.ErrInvalid)
	}
	st := s.State()
	reply.Exists = make([]bool, len(args.Jobs))
	for i, j := range args.Jobs {
		job, err := st.JobByID(nil, j.Namespace, j.JobID)
		if err != nil {
			return fmt.Errorf("jobs exist: %w", err)
		}
		reply.Exists[i] = job != nil
	}
	s.setQueryMeta(&reply.QueryMeta)
	return nil
}
