package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/server/scheduler"
	"github.com/droverhq/drover/structs"
)

// Plan runs the scheduler on a private copy of the state with the job
// registered, and reports what it would place, stop and fail to place.
// Nothing is committed: the copy is a memdb snapshot, discarded after.
func (e *jobEndpoint) Plan(args *structs.JobPlanRequest, reply *structs.JobPlanResponse) (err error) {
	s := e.srv
	defer s.recoverPanic(structs.RPCJobPlan, &err)
	if done, err := s.forward(structs.RPCJobPlan, args, reply); done {
		return err
	}
	if err := s.authorizeSubmit(args.AuthToken, args.Job); err != nil {
		return err
	}
	if args.Job == nil {
		return fmt.Errorf("plan job: missing job: %w", structs.ErrInvalid)
	}
	if err := args.Job.CheckShape(); err != nil {
		return err
	}
	if err := args.Job.CheckLimits(s.config.Limits); err != nil {
		return err
	}
	job := args.Job.Copy()
	job.Canonicalize()
	if err := job.Validate(); err != nil {
		return fmt.Errorf("%w: %w", structs.ErrInvalid, err)
	}
	// What registering would refuse, the dry run refuses too.
	if err := s.checkNamespace(job.Namespace); err != nil { // endpoint_namespace.go
		return err
	}
	if err := s.checkQueue(job.Queue); err != nil { // endpoint_queue.go
		return err
	}
	snap, err := s.State().Snapshot()
	if err != nil {
		return fmt.Errorf("plan job %q: %w", job.ID, err)
	}
	existing, err := snap.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return fmt.Errorf("plan job %q: %w", job.ID, err)
	}
	index, err := snap.LatestIndex()
	if err != nil {
		return fmt.Errorf("plan job %q: %w", job.ID, err)
	}
	// The dry run writes at an index past the real state's, into the
	// snapshot only.
	if err := snap.UpsertJob(index+1, job); err != nil {
		return fmt.Errorf("plan job %q: %w", job.ID, err)
	}
	planned, err := snap.JobByID(nil, job.Namespace, job.ID)
	if err != nil || planned == nil {
		return fmt.Errorf("plan job %q: job missing from the dry-run state: %v", job.ID, err)
	}
	now := time.Now()
	eval := newJobEval(planned, structs.EvalTriggerJobRegister, now.UnixNano())
	eval.ID = "plan-" + eval.ID
	rec := &dryRunPlanner{}
	sched, err := scheduler.New(job.Type, s.logger.Named("plan"), snap, rec, scheduler.WithNow(func() time.Time { return now }))
	if err != nil {
		return fmt.Errorf("plan job %q: %w: %w", job.ID, structs.ErrInvalid, err)
	}
	if err := sched.Process(eval); err != nil {
		return fmt.Errorf("plan job %q: %w", job.ID, err)
	}
	rec.fill(reply)
	reply.Warnings = strings.Join(job.Warnings(), "\n")
	if existing != nil {
		reply.JobModifyIndex = existing.JobModifyIndex
	}
	if args.Diff {
		reply.Diff = &structs.JobDiff{Type: diffType(existing, job), ID: job.ID, Fields: structs.SpecFieldDiffs(existing, job)}
	}
	return nil
}

// diffType compares the stored job's spec with the submitted one.
func diffType(old, job *structs.Job) string {
	switch {
	case old == nil:
		return structs.DiffTypeAdded
	case specJSON(old) == specJSON(job):
		return structs.DiffTypeNone
	}
	return structs.DiffTypeEdited
}

// specJSON renders what a user wrote of a job: server-owned fields cleared.
func specJSON(j *structs.Job) string {
	c := j.Copy()
	c.Status, c.StatusDescription, c.Version, c.SubmitTime = "", "", 0, 0
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
	c.Stop = false
	b, _ := json.Marshal(c)
	return string(b)
}

// dryRunPlanner records a scheduler's plan and evaluation updates and
// commits nothing: every plan "succeeds" in full.
type dryRunPlanner struct {
	plans []*structs.Plan
	eval  *structs.Evaluation
}

var _ scheduler.Planner = (*dryRunPlanner)(nil)

func (p *dryRunPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	p.plans = append(p.plans, plan)
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation}, nil, nil
}

func (p *dryRunPlanner) UpdateEval(eval *structs.Evaluation) error {
	p.eval = eval.Copy()
	return nil
}

func (p *dryRunPlanner) CreateEval(*structs.Evaluation) error  { return nil }
func (p *dryRunPlanner) ReblockEval(*structs.Evaluation) error { return nil }

// fill turns what was recorded into the response.
func (p *dryRunPlanner) fill(reply *structs.JobPlanResponse) {
	ann := &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{}}
	reply.Placements, reply.Stops, reply.Preemptions = []*structs.PlannedAlloc{}, []*structs.PlannedAlloc{}, []*structs.PlannedAlloc{}
	group := func(name string) *structs.DesiredUpdates {
		if ann.DesiredTGUpdates[name] == nil {
			ann.DesiredTGUpdates[name] = &structs.DesiredUpdates{}
		}
		return ann.DesiredTGUpdates[name]
	}
	for _, plan := range p.plans {
		// A stop for a job update and the placement of its name are one
		// destructive update.
		replaced := map[string]bool{}
		for _, allocs := range plan.NodeUpdate {
			for _, a := range allocs {
				if a.PreemptedByAllocation != "" {
					reply.Preemptions = append(reply.Preemptions, &structs.PlannedAlloc{
						JobID: a.JobID, Name: a.Name, TaskGroup: a.TaskGroup, NodeID: a.NodeID, NodeName: a.NodeName,
						AllocID: a.ID, GPUs: a.DeviceIDs(), Reason: a.DesiredDescription,
					})
					continue
				}
				if a.DesiredDescription == scheduler.DescUpdated {
					group(a.TaskGroup).DestructiveUpdate++
					replaced[a.Name] = true
				} else {
					group(a.TaskGroup).Stop++
				}
				reply.Stops = append(reply.Stops, &structs.PlannedAlloc{
					Name: a.Name, TaskGroup: a.TaskGroup, NodeID: a.NodeID, NodeName: a.NodeName,
					AllocID: a.ID, GPUs: a.DeviceIDs(), Reason: a.DesiredDescription,
				})
			}
		}
		for _, allocs := range plan.NodeAllocation {
			for _, a := range allocs {
				switch {
				case a.DeploymentStatus != nil && a.DeploymentStatus.Canary:
					group(a.TaskGroup).Canary++ // Nomad counts a canary apart from placements
				case !replaced[a.Name]:
					group(a.TaskGroup).Place++
				}
				reply.Placements = append(reply.Placements, &structs.PlannedAlloc{
					Name: a.Name, TaskGroup: a.TaskGroup, NodeID: a.NodeID, NodeName: a.NodeName,
					AllocID: a.ID, GPUs: a.DeviceIDs(),
				})
			}
		}
		for _, allocs := range plan.NodeInPlaceUpdate {
			for _, a := range allocs {
				group(a.TaskGroup).InPlaceUpdate++
			}
		}
	}
	byName := func(a, b *structs.PlannedAlloc) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(reply.Placements, byName)
	slices.SortFunc(reply.Stops, byName)
	slices.SortFunc(reply.Preemptions, byName)
	reply.Annotations = ann
	if p.eval != nil {
		reply.FailedTGAllocs = p.eval.FailedTGAllocs
	}
}
