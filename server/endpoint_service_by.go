package server

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// ByJob returns the service registrations of one job (read-job in its
// namespace); an unknown job is not found.
func (e *serviceEndpoint) ByJob(args *structs.JobSpecificRequest, reply *structs.ServiceRegistrationByNameResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCServiceRegistrationsByJob, &err)
	if done, err := s.forward(structs.RPCServiceRegistrationsByJob, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	if err := s.allowNS(args.AuthToken, ns, acl.CapReadJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return errMissing(structs.RPCServiceRegistrationsByJob, "job ID")
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		if _, err := jobOf(ws, st, ns, args.JobID); err != nil {
			return 0, err
		}
		regs, err := st.ServiceRegistrations(ws, ns)
		if err != nil {
			return 0, err
		}
		reply.Services = []*structs.ServiceRegistration{}
		for _, r := range regs {
			if r.JobID == args.JobID {
				reply.Services = append(reply.Services, r.Copy())
			}
		}
		return tablesIndex(st, []string{state.TableJobs, state.TableServiceRegistrations})
	})
}

// ByAlloc returns the service registrations of one allocation (by ID or
// unique prefix; read-job in its namespace).
func (e *serviceEndpoint) ByAlloc(args *structs.AllocSpecificRequest, reply *structs.ServiceRegistrationByNameResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCServiceRegistrationsByAlloc, &err)
	if done, err := s.forward(structs.RPCServiceRegistrationsByAlloc, args, reply); done {
		return err
	}
	a, err := s.anyNS(args.AuthToken, acl.CapReadJob)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		alloc, err := resolveAlloc(ws, st, args.AllocID, func(ns string) bool { return a.AllowNamespaceOperation(ns, acl.CapReadJob) })
		if err != nil {
			return 0, err
		}
		if !a.AllowNamespaceOperation(alloc.Namespace, acl.CapReadJob) {
			return 0, errPermissionDenied
		}
		regs, err := st.ServiceRegistrationsByAlloc(ws, alloc.ID)
		if err != nil {
			return 0, err
		}
		reply.Services = make([]*structs.ServiceRegistration, 0, len(regs))
		for _, r := range regs {
			reply.Services = append(reply.Services, r.Copy())
		}
		return tablesIndex(st, []string{state.TableAllocs, state.TableServiceRegistrations})
	})
}
