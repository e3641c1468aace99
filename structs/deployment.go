package structs

import (
	"slices"
	"time"
)

// Deployments (Nomad's model): each registration of a new version of a
// service job whose groups have an update strategy gets a Deployment
// that tracks its rollout per group: canaries placed beside the old
// allocations until promoted, then old allocations replaced max_parallel
// at a time as new ones become healthy. The scheduler creates it in a
// plan, the clients report allocation health, and the leader's
// deployment watcher (server/deployment_watcher.go) promotes, fails,
// rolls back and completes it.

// EvalTriggerDeploymentWatcher: a deployment moved on (an allocation
// became healthy, canaries were promoted, it was resumed): more
// allocations may be replaced.
const EvalTriggerDeploymentWatcher = "deployment-watcher"

// Deployment statuses (Nomad's).
const (
	DeploymentStatusRunning    = "running"
	DeploymentStatusPaused     = "paused"
	DeploymentStatusFailed     = "failed"
	DeploymentStatusSuccessful = "successful"
	DeploymentStatusCancelled  = "cancelled"
	DeploymentStatusPending    = "pending"
	DeploymentStatusBlocked    = "blocked"
)

// Deployment status descriptions (Nomad's texts).
const (
	DeploymentDescRunning               = "Deployment is running"
	DeploymentDescRunningNeedsPromotion = "Deployment is running but requires manual promotion"
	DeploymentDescRunningAutoPromotion  = "Deployment is running pending automatic promotion"
	DeploymentDescPaused                = "Deployment is paused"
	DeploymentDescSuccessful            = "Deployment completed successfully"
	DeploymentDescStoppedJob            = "Cancelled because job is stopped"
	DeploymentDescNewerJob              = "Cancelled due to newer version of job"
	DeploymentDescFailedAllocations     = "Failed due to unhealthy allocations"
	DeploymentDescProgressDeadline      = "Failed due to progress deadline"
	DeploymentDescFailedByUser          = "Deployment marked as failed"
)

// Raft message types of deployments (70-79 are versions' and
// deployments').
const (
	// ApplyPlanResultsDeploymentRequestType is a plan's results that
	// also create or update a deployment: ApplyPlanResultsRequest with
	// Deployment or DeploymentUpdates set. Plans without them keep
	// their older types.
	ApplyPlanResultsDeploymentRequestType MessageType = 71
	// DeploymentStatusUpdateRequestType changes a deployment's status
	// (fail, pause, resume, success), optionally with a job to register
	// (auto-revert) and an evaluation.
	DeploymentStatusUpdateRequestType MessageType = 72
	// DeploymentPromoteRequestType promotes a deployment's canaries.
	DeploymentPromoteRequestType MessageType = 73
)

// RPC methods of deployments.
const (
	RPCDeploymentList        = "Deployment.List"
	RPCDeploymentGet         = "Deployment.GetDeployment"
	RPCDeploymentAllocations = "Deployment.Allocations"
	RPCDeploymentPromote     = "Deployment.Promote"
	RPCDeploymentFail        = "Deployment.Fail"
	RPCDeploymentPause       = "Deployment.Pause"
	RPCJobDeployments        = "Job.Deployments"
	RPCJobLatestDeployment   = "Job.LatestDeployment"
)

// Deployment is the rollout of one job version (Nomad's api.Deployment).
type Deployment struct {
	ID                 string
	Namespace          string
	JobID              string
	JobVersion         uint64
	JobModifyIndex     uint64
	JobSpecModifyIndex uint64
	JobCreateIndex     uint64
	IsMultiregion      bool
	TaskGroups         map[string]*DeploymentState
	Status             string
	StatusDescription  string
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

// DeploymentState is one group's part of a deployment.
type DeploymentState struct {
	AutoRevert        bool
	AutoPromote       bool
	ProgressDeadline  time.Duration
	RequireProgressBy time.Time
	Promoted          bool
	PlacedCanaries    []string
	DesiredCanaries   int
	DesiredTotal      int
	PlacedAllocs      int
	HealthyAllocs     int
	UnhealthyAllocs   int
}

// AllocDeploymentStatus is an allocation's health in its deployment
// (Nomad's): Healthy is nil until the client decides.
type AllocDeploymentStatus struct {
	Healthy     *bool
	Timestamp   time.Time
	Canary      bool
	ModifyIndex uint64
}

// IsHealthy and IsUnhealthy report a decided health.
func (s *AllocDeploymentStatus) IsHealthy() bool {
	return s != nil && s.Healthy != nil && *s.Healthy
}

// IsUnhealthy reports a health decided unhealthy.
func (s *AllocDeploymentStatus) IsUnhealthy() bool {
	return s != nil && s.Healthy != nil && !*s.Healthy
}

// IsCanary reports whether the allocation was placed as a canary.
func (s *AllocDeploymentStatus) IsCanary() bool { return s != nil && s.Canary }

// Copy returns a deep copy (nil for nil).
func (s *AllocDeploymentStatus) Copy() *AllocDeploymentStatus {
	if s == nil {
		return nil
	}
	c := *s
	if s.Healthy != nil {
		h := *s.Healthy
		c.Healthy = &h
	}
	return &c
}

// Active reports whether the deployment still moves: running or paused.
func (d *Deployment) Active() bool {
	return d != nil && (d.Status == DeploymentStatusRunning || d.Status == DeploymentStatusPaused ||
		d.Status == DeploymentStatusPending || d.Status == DeploymentStatusBlocked)
}

// Copy returns a deep copy (nil for nil).
func (d *Deployment) Copy() *Deployment {
	if d == nil {
		return nil
	}
	c := *d
	if d.TaskGroups != nil {
		c.TaskGroups = make(map[string]*DeploymentState, len(d.TaskGroups))
		for k, v := range d.TaskGroups {
			c.TaskGroups[k] = v.Copy()
		}
	}
	return &c
}

// Copy returns a deep copy (nil for nil).
func (s *DeploymentState) Copy() *DeploymentState {
	if s == nil {
		return nil
	}
	c := *s
	c.PlacedCanaries = slices.Clone(s.PlacedCanaries)
	return &c
}

// RequiresPromotion reports whether a group has canaries to promote.
func (d *Deployment) RequiresPromotion() bool {
	for _, s := range d.TaskGroups {
		if s.DesiredCanaries > 0 && !s.Promoted {
			return true
		}
	}
	return false
}

// HasAutoPromote reports whether every group with canaries promotes
// automatically.
func (d *Deployment) HasAutoPromote() bool {
	any := false
	for _, s := range d.TaskGroups {
		if s.DesiredCanaries > 0 {
			if !s.AutoPromote {
				return false
			}
			any = true
		}
	}
	return any
}

// NewDeployment returns a running deployment of job's current version,
// created at now.
func NewDeployment(job *Job, now int64) *Deployment {
	return &Deployment{
		ID: GenerateUUID(), Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
		JobModifyIndex: job.ModifyIndex, JobSpecModifyIndex: job.JobModifyIndex, JobCreateIndex: job.CreateIndex,
		TaskGroups: map[string]*DeploymentState{},
		Status:     DeploymentStatusRunning, StatusDescription: DeploymentDescRunning,
		CreateTime: now, ModifyTime: now,
	}
}

// DeploymentStatusUpdate is a change of one deployment's status.
type DeploymentStatusUpdate struct {
	DeploymentID      string
	Status            string
	StatusDescription string
}

// DeploymentStatusUpdateRequest is the Raft entry of
// DeploymentStatusUpdateRequestType: the status change, a job to
// register with it (an auto-revert; nil for none), an evaluation, and
// whether the deployment's job version becomes stable (on success).
type DeploymentStatusUpdateRequest struct {
	DeploymentUpdate *DeploymentStatusUpdate
	Job              *Job
	Eval             *Evaluation
	MarkStable       bool
	WriteRequest
}

// DeploymentPromoteRequest promotes canaries (Nomad's): all groups, or
// those named. As a Raft entry it carries the evaluation that replaces
// the old allocations.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	// PromotedAt (unix nanoseconds) restarts the promoted groups'
	// progress deadlines.
	PromotedAt int64
	Eval       *Evaluation
	WriteRequest
}

// DeploymentFailRequest fails a deployment (Nomad's).
type DeploymentFailRequest struct {
	DeploymentID string
	WriteRequest
}

// DeploymentPauseRequest pauses or resumes a deployment (Nomad's).
type DeploymentPauseRequest struct {
	DeploymentID string
	Pause        bool
	WriteRequest
}

// DeploymentSpecificRequest names one deployment.
type DeploymentSpecificRequest struct {
	DeploymentID string
	QueryOptions
}

// DeploymentListRequest lists deployments (Prefix filters by ID).
type DeploymentListRequest struct {
	QueryOptions
}

// DeploymentListResponse lists deployments, newest first.
type DeploymentListResponse struct {
	Deployments []*Deployment
	QueryMeta
}

// SingleDeploymentResponse holds one deployment, or nil.
type SingleDeploymentResponse struct {
	Deployment *Deployment
	QueryMeta
}

// DeploymentAllocationsResponse lists a deployment's allocations.
type DeploymentAllocationsResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// DeploymentUpdateResponse is Nomad's answer to a deployment write.
type DeploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
	Index                 uint64
}

// JobDeploymentsRequest asks for a job's deployments.
type JobDeploymentsRequest struct {
	JobID string
	All   bool
	QueryOptions
}
