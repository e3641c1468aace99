package server

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// scalingEndpoint serves Nomad's scaling policy reads. The policies are
// the jobs' group scaling blocks, read from the jobs table: their IDs
// are derived from namespace, job and group (structs.ScalingPolicyID),
// their indexes are the job's, and a stopped job's are disabled.
type scalingEndpoint struct {
	srv *Server
}

// scalingFilter returns which namespaces a token may read policies in:
// those where it has capability or, as in Nomad, alt (the job read).
// A token that has neither in ns is refused.
func (s *Server) scalingFilter(token, ns, capability, alt string) (func(string) bool, error) {
	a, _, err := s.resolveToken(token)
	if err != nil {
		return nil, err
	}
	allow := func(n string) bool {
		return a.AllowNamespaceOperation(n, capability) || a.AllowNamespaceOperation(n, alt)
	}
	if !allow(ns) {
		return nil, errPermissionDenied
	}
	return allow, nil
}

// ListPolicies lists the policies of the request's namespace ("*" for
// all), filtered by job and type. Its index is the jobs table's.
func (e *scalingEndpoint) ListPolicies(args *structs.ScalingPolicyListRequest, reply *structs.ScalingPolicyListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCScalingListPolicies, &err)
	if done, err := s.forward(structs.RPCScalingListPolicies, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	keep, err := s.scalingFilter(args.AuthToken, ns, acl.CapListScalingPolicies, acl.CapListJobs)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		jobs, err := st.JobsByIDPrefix(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Policies = []*structs.ScalingPolicyListStub{}
		for _, j := range jobs {
			if !keep(j.Namespace) || (args.JobID != "" && j.ID != args.JobID) {
				continue
			}
			for _, p := range jobPolicies(j) {
				if args.Type == "" || p.Type == args.Type {
					reply.Policies = append(reply.Policies, p.Stub())
				}
			}
		}
		return tablesIndex(st, []string{state.TableJobs})
	})
}

// GetPolicy returns one policy by ID from the namespaces the token may
// read policies in (structs.ErrNotFound when none there has it). Its
// index is the jobs table's.
func (e *scalingEndpoint) GetPolicy(args *structs.ScalingPolicySpecificRequest, reply *structs.SingleScalingPolicyResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCScalingGetPolicy, &err)
	if done, err := s.forward(structs.RPCScalingGetPolicy, args, reply); done {
		return err
	}
	keep, err := s.scalingFilter(args.AuthToken, queryNamespace(args.QueryOptions), acl.CapReadScalingPolicy, acl.CapReadJob)
	if err != nil {
		return err
	}
	if args.ID == "" {
		return errMissing(structs.RPCScalingGetPolicy, "policy ID")
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		jobs, err := st.Jobs(ws, "*")
		if err != nil {
			return 0, err
		}
		reply.Policy = nil
		for _, j := range jobs {
			if !keep(j.Namespace) {
				continue
			}
			for _, p := range jobPolicies(j) {
				if p.ID == args.ID {
					reply.Policy = p
				}
			}
		}
		if reply.Policy == nil {
			return 0, structs.KindErrorf(structs.ErrNotFound, "scaling policy %q not found", args.ID)
		}
		return tablesIndex(st, []string{state.TableJobs})
	})
}

// jobPolicies returns the job's policies as reads show them: disabled
// while the job is stopped, as Nomad does.
func jobPolicies(j *structs.Job) []*structs.ScalingPolicy {
	ps := j.ScalingPolicies()
	if j.Stop {
		for _, p := range ps {
			p.Enabled = new(false)
		}
	}
	return ps
}
