package structs

import (
	"maps"
	"slices"
	"time"
)

// Evaluation statuses.
const (
	EvalStatusPending   = "pending"
	EvalStatusComplete  = "complete"
	EvalStatusFailed    = "failed"
	EvalStatusBlocked   = "blocked"
	EvalStatusCancelled = "canceled"
)

// What triggered an evaluation.
const (
	EvalTriggerJobRegister   = "job-register"
	EvalTriggerJobDeregister = "job-deregister"
	EvalTriggerNodeUpdate    = "node-update"
	EvalTriggerAllocStop     = "alloc-stop"
	EvalTriggerRetryFailed   = "alloc-failure"
	EvalTriggerQueuedAllocs  = "queued-allocs"
	EvalTriggerMaxPlans      = "max-plan-attempts"
	// EvalTriggerRollingUpdate: a replacement of a rolling update started
	// running, so the next batch may go.
	EvalTriggerRollingUpdate = "rolling-update"
)

// Evaluation asks the scheduler to reconcile one job with the cluster.
type Evaluation struct {
	ID                string
	Namespace         string
	Priority          int
	Type              string // the job's type, which picks the scheduler
	TriggeredBy       string
	JobID             string
	JobModifyIndex    uint64
	NodeID            string
	NodeModifyIndex   uint64
	Status            string
	StatusDescription string
	Wait              time.Duration
	NextEval          string
	PreviousEval      string
	BlockedEval       string
	// FailedTGAllocs explains, per task group, why placements failed.
	FailedTGAllocs map[string]*AllocMetric
	// QueuedAllocations counts, per task group, allocations not yet placed.
	QueuedAllocations map[string]int
	// SnapshotIndex is the state index the scheduler worked from.
	SnapshotIndex uint64

	CreateIndex uint64
	ModifyIndex uint64
	CreateTime  int64
	ModifyTime  int64
}

// TerminalStatus reports whether the evaluation is finished.
func (e *Evaluation) TerminalStatus() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCancelled:
		return true
	}
	return false
}

// Copy returns a deep copy.
func (e *Evaluation) Copy() *Evaluation {
	if e == nil {
		return nil
	}
	c := *e
	if e.FailedTGAllocs != nil {
		c.FailedTGAllocs = make(map[string]*AllocMetric, len(e.FailedTGAllocs))
		for k, v := range e.FailedTGAllocs {
			c.FailedTGAllocs[k] = v.Copy()
		}
	}
	c.QueuedAllocations = maps.Clone(e.QueuedAllocations)
	return &c
}

// CreateBlockedEval returns a blocked evaluation that follows e, to be
// retried when capacity changes.
func (e *Evaluation) CreateBlockedEval(failed map[string]*AllocMetric, now time.Time) *Evaluation {
	return &Evaluation{
		ID:             GenerateUUID(),
		Namespace:      e.Namespace,
		Priority:       e.Priority,
		Type:           e.Type,
		TriggeredBy:    EvalTriggerQueuedAllocs,
		JobID:          e.JobID,
		JobModifyIndex: e.JobModifyIndex,
		Status:         EvalStatusBlocked,
		PreviousEval:   e.ID,
		FailedTGAllocs: failed,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
}

// AllocMetric explains a placement: how many nodes were looked at, why
// they were filtered or exhausted, and the best scores.
type AllocMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesAvailable     map[string]int // by datacenter
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int // by constraint or reason
	NodesExhausted     int
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int // "cpu", "memory", "devices: ..."
	// QuotaExhausted lists why placements that fit a node were refused by
	// the namespace's quota (`quota "q" exhausted: gpu 2 of 2 used, need
	// 1`), as Nomad's field of that name.
	QuotaExhausted []string
	// Queue says why a fair-share queue held a placement back
	// (Drover's): the queue is at its maximum, or past its fair share
	// while another queue waits.
	Queue string
	// Gang says why a gang's placements were held back (Drover's; see
	// structs.Gang): some group of it would not reach its min.
	Gang              string
	ScoreMetaData     []*NodeScoreMeta
	AllocationTime    time.Duration
	CoalescedFailures int
}

// NodeScoreMeta is one node's scores.
type NodeScoreMeta struct {
	NodeID    string
	Scores    map[string]float64
	NormScore float64
}

// FilterNode records a node filtered for reason.
func (m *AllocMetric) FilterNode(reason string) {
	m.NodesFiltered++
	if reason == "" {
		return
	}
	if m.ConstraintFiltered == nil {
		m.ConstraintFiltered = map[string]int{}
	}
	m.ConstraintFiltered[reason]++
}

// ExhaustedNode records a node without room, for the dimension named.
func (m *AllocMetric) ExhaustedNode(dimension string) {
	m.NodesExhausted++
	if dimension == "" {
		return
	}
	if m.DimensionExhausted == nil {
		m.DimensionExhausted = map[string]int{}
	}
	m.DimensionExhausted[dimension]++
}

// Copy returns a deep copy.
func (m *AllocMetric) Copy() *AllocMetric {
	if m == nil {
		return nil
	}
	c := *m
	c.NodesAvailable = maps.Clone(m.NodesAvailable)
	c.ClassFiltered = maps.Clone(m.ClassFiltered)
	c.ConstraintFiltered = maps.Clone(m.ConstraintFiltered)
	c.ClassExhausted = maps.Clone(m.ClassExhausted)
	c.DimensionExhausted = maps.Clone(m.DimensionExhausted)
	c.QuotaExhausted = slices.Clone(m.QuotaExhausted)
	c.ScoreMetaData = slices.Clone(m.ScoreMetaData)
	return &c
}

// Plan is a scheduler's proposed change for one evaluation: allocations to
// stop and allocations to place, per node. The leader's plan applier
// re-checks it against the latest state before committing.
type Plan struct {
	EvalID   string
	Priority int
	Job      *Job
	// NodeUpdate holds allocations to stop (DesiredStatus set), per node.
	NodeUpdate map[string][]*Allocation
	// NodeAllocation holds new or updated allocations, per node.
	NodeAllocation map[string][]*Allocation
	// NodeInPlaceUpdate holds live allocations moved to the plan's job
	// version in place (same ID, node and resources), per node.
	NodeInPlaceUpdate map[string][]*Allocation
	// SnapshotIndex is the state index the plan was computed from.
	SnapshotIndex uint64
	// AllAtOnce asks the applier to commit the whole plan or nothing (a
	// gang's placements, structs.Gang), never a part.
	AllAtOnce bool
	// Reservation, when set, is stored for the plan's waiting gang;
	// ReleaseReservation drops the job's reservation (structs.Reservation).
	Reservation        *Reservation
	ReleaseReservation bool
	// EvalUpdate, when set, is the plan's evaluation as it ends if the
	// plan is committed whole (complete, nothing left to place). The
	// applier writes it in the plan's own commit, saving the evaluation's
	// separate write; a plan committed in part drops it
	// (PlanResult.EvalUpdated) and the scheduler retries as before.
	EvalUpdate *Evaluation
	// Deployment, when set, is created or replaced with the plan;
	// DeploymentUpdates change other deployments' status (a newer
	// version cancels the older one's). structs/deployment.go.
	Deployment        *Deployment               `json:",omitempty"`
	DeploymentUpdates []*DeploymentStatusUpdate `json:",omitempty"`
}

// AppendStoppedAlloc adds a stop of alloc to the plan.
func (p *Plan) AppendStoppedAlloc(alloc *Allocation, desc, clientStatus string) {
	a := alloc.Copy()
	a.DesiredStatus = AllocDesiredStatusStop
	a.DesiredDescription = desc
	if clientStatus != "" {
		a.ClientStatus = clientStatus
	}
	if p.NodeUpdate == nil {
		p.NodeUpdate = map[string][]*Allocation{}
	}
	p.NodeUpdate[a.NodeID] = append(p.NodeUpdate[a.NodeID], a)
}

// AppendAlloc adds a placement to the plan.
func (p *Plan) AppendAlloc(alloc *Allocation) {
	if p.NodeAllocation == nil {
		p.NodeAllocation = map[string][]*Allocation{}
	}
	p.NodeAllocation[alloc.NodeID] = append(p.NodeAllocation[alloc.NodeID], alloc)
}

// AppendInPlaceUpdate adds an update of alloc to job in place: a copy
// with the new Job and the plan's eval, same ID, node and resources.
func (p *Plan) AppendInPlaceUpdate(alloc *Allocation, job *Job) {
	a := alloc.Copy()
	a.Job = job
	a.EvalID = p.EvalID
	if p.NodeInPlaceUpdate == nil {
		p.NodeInPlaceUpdate = map[string][]*Allocation{}
	}
	p.NodeInPlaceUpdate[a.NodeID] = append(p.NodeInPlaceUpdate[a.NodeID], a)
}

// IsNoOp reports whether the plan changes nothing.
func (p *Plan) IsNoOp() bool {
	return len(p.NodeUpdate) == 0 && len(p.NodeAllocation) == 0 && len(p.NodeInPlaceUpdate) == 0 &&
		p.Reservation == nil && !p.ReleaseReservation && p.Deployment == nil && len(p.DeploymentUpdates) == 0
}

// PlanResult is what the plan applier committed.
type PlanResult struct {
	NodeUpdate        map[string][]*Allocation
	NodeAllocation    map[string][]*Allocation
	NodeInPlaceUpdate map[string][]*Allocation
	// RefreshIndex is non-zero when part of the plan was rejected: the
	// scheduler must refresh its state to at least this index and retry.
	RefreshIndex uint64
	// AllocIndex is the Raft index at which the result was committed.
	AllocIndex uint64
	// RejectedNodes lists nodes whose part of the plan did not fit.
	RejectedNodes []string
	// EvalUpdated reports that the plan's EvalUpdate was written with it.
	EvalUpdated bool
}

// FullCommit reports whether everything in plan was committed, and the
// counts expected and committed.
func (r *PlanResult) FullCommit(p *Plan) (bool, int, int) {
	expected, actual := 0, 0
	for node, allocs := range p.NodeAllocation {
		expected += len(allocs)
		actual += len(r.NodeAllocation[node])
	}
	for node, allocs := range p.NodeUpdate {
		expected += len(allocs)
		actual += len(r.NodeUpdate[node])
	}
	for node, allocs := range p.NodeInPlaceUpdate {
		expected += len(allocs)
		actual += len(r.NodeInPlaceUpdate[node])
	}
	return expected == actual, expected, actual
}
