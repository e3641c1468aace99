package structs

// RPCJobPlan is the dry-run scheduling endpoint.
const RPCJobPlan = "Job.Plan"

// Job diff types.
const (
	DiffTypeNone    = "None"
	DiffTypeAdded   = "Added"
	DiffTypeEdited  = "Edited"
	DiffTypeDeleted = "Deleted"
)

// JobPlanRequest asks what registering Job would do, without doing it.
type JobPlanRequest struct {
	Job  *Job
	Diff bool
	WriteRequest
}

// JobPlanResponse is the scheduler's answer to a dry run: what it would
// place (with the exact GPUs), stop, and fail to place, and why.
type JobPlanResponse struct {
	// JobModifyIndex is the current job's modify index (0 when new), for
	// a check-and-set `job run`.
	JobModifyIndex uint64
	Diff           *JobDiff
	Annotations    *PlanAnnotations
	// FailedTGAllocs explains, per task group, what could not be placed.
	FailedTGAllocs map[string]*AllocMetric
	// Placements lists each allocation the plan would create (Drover).
	Placements []*PlannedAlloc
	// Stops lists each allocation the plan would stop (Drover).
	Stops []*PlannedAlloc
	// Preemptions lists the allocations of other jobs the plan would
	// preempt (Drover; Nomad puts them in Annotations.PreemptedAllocs).
	Preemptions []*PlannedAlloc
	Warnings    string
}

// JobDiff says how the submitted job differs from the stored one
// (Nomad's shape; Drover's changes are flat Fields, structs/job_diff.go).
type JobDiff struct {
	Type       string
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// PlanAnnotations counts the plan's changes per task group.
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates
}

// DesiredUpdates counts one group's changes.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64 // canaries placed for a new version
}

// PlannedAlloc is one allocation of a dry run.
type PlannedAlloc struct {
	// JobID is set for preemptions: the victim's job.
	JobID     string `json:",omitempty"`
	Name      string
	TaskGroup string
	NodeID    string
	NodeName  string
	AllocID   string
	GPUs      []string
	Reason    string `json:",omitempty"`
}
