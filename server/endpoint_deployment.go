package server

import (
	"fmt"
	"slices"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/acl"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// deploymentEndpoint serves the "Deployment" RPC methods: reads need
// read-job in the deployment's namespace, writes submit-job (Nomad's).
type deploymentEndpoint struct{ srv *Server }

// List returns the deployments of the request's namespace ("*": all it
// may read) whose ID starts with Prefix, newest first.
func (e *deploymentEndpoint) List(args *structs.DeploymentListRequest, reply *structs.DeploymentListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCDeploymentList, &err)
	if done, err := s.forward(structs.RPCDeploymentList, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	keep, err := s.nsFilter(args.AuthToken, ns, acl.CapReadJob)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		all, err := st.Deployments(ws, ns, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Deployments = slices.DeleteFunc(all, func(d *structs.Deployment) bool { return !keep(d.Namespace) })
		return st.Index(state.TableDeployments)
	})
}

// GetDeployment returns one deployment by ID, or by a prefix only one
// of the namespace's deployments has.
func (e *deploymentEndpoint) GetDeployment(args *structs.DeploymentSpecificRequest, reply *structs.SingleDeploymentResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCDeploymentGet, &err)
	if done, err := s.forward(structs.RPCDeploymentGet, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	keep, err := s.nsFilter(args.AuthToken, ns, acl.CapReadJob)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		d, err := deploymentOf(ws, st, ns, args.DeploymentID, keep)
		if err != nil {
			return 0, err
		}
		reply.Deployment = d
		return d.ModifyIndex, nil
	})
}

// Allocations returns the stubs of a deployment's allocations.
func (e *deploymentEndpoint) Allocations(args *structs.DeploymentSpecificRequest, reply *structs.DeploymentAllocationsResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCDeploymentAllocations, &err)
	if done, err := s.forward(structs.RPCDeploymentAllocations, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	keep, err := s.nsFilter(args.AuthToken, ns, acl.CapReadJob)
	if err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		d, err := deploymentOf(ws, st, ns, args.DeploymentID, keep)
		if err != nil {
			return 0, err
		}
		allocs, err := st.AllocsByJob(ws, d.Namespace, d.JobID)
		if err != nil {
			return 0, err
		}
		allocs = slices.DeleteFunc(allocs, func(a *structs.Allocation) bool { return a.DeploymentID != d.ID })
		reply.Allocations = allocStubs(allocs)
		return st.Index(state.TableAllocs)
	})
}

// deploymentOf finds a deployment of namespace ns by ID or unique ID
// prefix, among those whose namespace keep admits: with ns "*" the
// others are not found, never answered nor acted on.
func deploymentOf(ws memdb.WatchSet, st *state.StateStore, ns, id string, keep func(string) bool) (*structs.Deployment, error) {
	if id == "" {
		return nil, structs.KindErrorf(structs.ErrInvalid, "missing deployment ID")
	}
	all, err := st.Deployments(ws, ns, id)
	if err != nil {
		return nil, err
	}
	all = slices.DeleteFunc(all, func(d *structs.Deployment) bool { return !keep(d.Namespace) })
	for _, d := range all {
		if d.ID == id {
			return d, nil
		}
	}
	switch len(all) {
	case 0:
		return nil, structs.KindErrorf(structs.ErrNotFound, "deployment %q not found", id)
	case 1:
		return all[0], nil
	}
	return nil, structs.KindErrorf(structs.ErrInvalid, "deployment prefix %q matches %d deployments", id, len(all))
}

// writableDeployment checks the token and finds the deployment a write
// names.
func (s *Server) writableDeployment(w structs.WriteRequest, id string) (*structs.Deployment, error) {
	ns := writeNamespace(w)
	keep, err := s.nsFilter(w.AuthToken, ns, acl.CapSubmitJob)
	if err != nil {
		return nil, err
	}
	return deploymentOf(nil, s.State(), ns, id, keep)
}

// Promote promotes the canaries of all groups (All) or of Groups; each
// must have all its canaries healthy (Nomad's rule).
func (e *deploymentEndpoint) Promote(args *structs.DeploymentPromoteRequest, reply *structs.DeploymentUpdateResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCDeploymentPromote, &err)
	if done, err := s.forward(structs.RPCDeploymentPromote, args, reply); done {
		return err
	}
	d, err := s.writableDeployment(args.WriteRequest, args.DeploymentID)
	if err != nil {
		return err
	}
	if !args.All && len(args.Groups) == 0 {
		return structs.KindErrorf(structs.ErrInvalid, "promote: give All or Groups")
	}
	if d.Status != structs.DeploymentStatusRunning {
		return structs.KindErrorf(structs.ErrInvalid, "can't promote deployment %s: it is %s", d.ID, d.Status)
	}
	allocs, err := s.State().AllocsByJob(nil, d.Namespace, d.JobID)
	if err != nil {
		return fmt.Errorf("promote deployment %s: %w", d.ID, err)
	}
	for _, name := range sortedGroupNames(d) {
		st := d.TaskGroups[name]
		if (!args.All && !slices.Contains(args.Groups, name)) || st.DesiredCanaries == 0 || st.Promoted {
			continue
		}
		var group []*structs.Allocation
		for _, a := range allocs {
			if a.TaskGroup == name {
				group = append(group, a)
			}
		}
		if h := healthyCanaries(d, group); h < st.DesiredCanaries {
			return structs.KindErrorf(structs.ErrInvalid, "Task group %q has %d/%d healthy allocations", name, h, st.DesiredCanaries)
		}
	}
	now := time.Now()
	req := &structs.DeploymentPromoteRequest{DeploymentID: d.ID, All: args.All, Groups: args.Groups, PromotedAt: now.UnixNano()}
	if err := s.deploymentEval(d, now, func(e *structs.Evaluation) { req.Eval = e }); err != nil {
		return err
	}
	index, err := s.raftApply(structs.DeploymentPromoteRequestType, req)
	if err != nil {
		return err
	}
	fillDeploymentReply(reply, req.Eval, index)
	return nil
}

// Fail fails a running or paused deployment; a group with auto_revert
// rolls the job back to its latest stable version.
func (e *deploymentEndpoint) Fail(args *structs.DeploymentFailRequest, reply *structs.DeploymentUpdateResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCDeploymentFail, &err)
	if done, err := s.forward(structs.RPCDeploymentFail, args, reply); done {
		return err
	}
	d, err := s.writableDeployment(args.WriteRequest, args.DeploymentID)
	if err != nil {
		return err
	}
	if !d.Active() {
		return structs.KindErrorf(structs.ErrInvalid, "can't fail terminal deployment")
	}
	stable, err := s.latestStableVersion(d)
	if err != nil {
		return err
	}
	act := failDeployment(d, stable, structs.DeploymentDescFailedByUser)
	if act.revertTo != nil {
		// The auto-revert registers that version: held to what Job.Revert
		// to it needs (its queue, submit-shared-gpu).
		if err := s.authorizeSubmit(args.AuthToken, act.revertTo); err != nil {
			return err
		}
	}
	job, err := s.State().JobByID(nil, d.Namespace, d.JobID)
	if err != nil {
		return err
	}
	now := time.Now()
	if err := s.applyDeploymentAction(d, job, act, now); err != nil {
		return err
	}
	if act.revertTo != nil {
		v := act.revertTo.Version
		reply.RevertedJobVersion = &v
	}
	after, _ := s.State().DeploymentByID(nil, d.ID)
	if after != nil {
		reply.DeploymentModifyIndex, reply.Index = after.ModifyIndex, after.ModifyIndex
	}
	return nil
}

// Pause pauses a running deployment, or resumes a paused one (with an
// evaluation, so that the rollout goes on).
func (e *deploymentEndpoint) Pause(args *structs.DeploymentPauseRequest, reply *structs.DeploymentUpdateResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCDeploymentPause, &err)
	if done, err := s.forward(structs.RPCDeploymentPause, args, reply); done {
		return err
	}
	d, err := s.writableDeployment(args.WriteRequest, args.DeploymentID)
	if err != nil {
		return err
	}
	if !d.Active() {
		return structs.KindErrorf(structs.ErrInvalid, "can't pause or resume terminal deployment")
	}
	u := &structs.DeploymentStatusUpdate{DeploymentID: d.ID, Status: structs.DeploymentStatusPaused, StatusDescription: structs.DeploymentDescPaused}
	req := &structs.DeploymentStatusUpdateRequest{DeploymentUpdate: u}
	if !args.Pause {
		u.Status, u.StatusDescription = structs.DeploymentStatusRunning, structs.DeploymentDescRunning
		if d.RequiresPromotion() {
			u.StatusDescription = structs.DeploymentDescRunningNeedsPromotion
		}
		if err := s.deploymentEval(d, time.Now(), func(e *structs.Evaluation) { req.Eval = e }); err != nil {
			return err
		}
	}
	index, err := s.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	if err != nil {
		return err
	}
	fillDeploymentReply(reply, req.Eval, index)
	return nil
}

// deploymentEval gives set an evaluation of d's job, when it still
// exists.
func (s *Server) deploymentEval(d *structs.Deployment, now time.Time, set func(*structs.Evaluation)) error {
	job, err := s.State().JobByID(nil, d.Namespace, d.JobID)
	if err != nil {
		return err
	}
	if job != nil && !job.Stopped() {
		set(newJobEval(job, structs.EvalTriggerDeploymentWatcher, now.UnixNano()))
	}
	return nil
}

func fillDeploymentReply(reply *structs.DeploymentUpdateResponse, eval *structs.Evaluation, index uint64) {
	if eval != nil {
		reply.EvalID, reply.EvalCreateIndex = eval.ID, index
	}
	reply.DeploymentModifyIndex, reply.Index = index, index
}

func sortedGroupNames(d *structs.Deployment) []string {
	names := make([]string, 0, len(d.TaskGroups))
	for n := range d.TaskGroups {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Deployments returns a job's deployments, newest first: those of its
// current registration, or with All those of earlier ones (a job purged
// and registered again) too.
func (e *jobEndpoint) Deployments(args *structs.JobDeploymentsRequest, reply *structs.DeploymentListResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobDeployments, &err)
	if done, err := s.forward(structs.RPCJobDeployments, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	if err := s.allowNS(args.AuthToken, ns, acl.CapReadJob); err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		all, err := st.DeploymentsByJob(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		job, err := st.JobByID(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		if !args.All && job != nil {
			all = slices.DeleteFunc(all, func(d *structs.Deployment) bool { return d.JobCreateIndex != job.CreateIndex })
		}
		reply.Deployments = all
		return st.Index(state.TableDeployments)
	})
}

// LatestDeployment returns a job's newest deployment (nil: none).
func (e *jobEndpoint) LatestDeployment(args *structs.JobDeploymentsRequest, reply *structs.SingleDeploymentResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobLatestDeployment, &err)
	if done, err := s.forward(structs.RPCJobLatestDeployment, args, reply); done {
		return err
	}
	ns := queryNamespace(args.QueryOptions)
	if err := s.allowNS(args.AuthToken, ns, acl.CapReadJob); err != nil {
		return err
	}
	return s.blockingRead(args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		d, err := st.LatestDeploymentByJob(ws, ns, args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Deployment = d
		return st.Index(state.TableDeployments)
	})
}
