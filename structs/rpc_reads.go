package structs

import "fmt"

// RPC method names of the reads the HTTP API serves, and of the writes
// it needs besides Job.Register (job scaling). Reads embed QueryOptions:
// with AllowStale any server answers from its own state, otherwise the
// leader does. Status.Leader, Status.Peers and Status.Regions are always
// answered by the server asked: they are about its own view.
const (
	RPCJobList           = "Job.List"
	RPCJobGetJob         = "Job.GetJob"
	RPCJobAllocations    = "Job.Allocations"
	RPCJobEvaluations    = "Job.Evaluations"
	RPCJobSummary        = "Job.Summary"
	RPCJobScale          = "Job.Scale"
	RPCAllocList         = "Alloc.List"
	RPCAllocGetAlloc     = "Alloc.GetAlloc"
	RPCEvalList          = "Eval.List"
	RPCEvalGetEval       = "Eval.GetEval"
	RPCEvalAllocations   = "Eval.Allocations"
	RPCNodeList          = "Node.List"
	RPCNodeGetNode       = "Node.GetNode"
	RPCNodeGetNodeAllocs = "Node.GetNodeAllocs"
	RPCGPUSummary        = "GPU.Summary"
	RPCStatusLeader      = "Status.Leader"
	RPCStatusPeers       = "Status.Peers"
	RPCStatusRegions     = "Status.Regions"
)

// kindError reads as its own message and matches its kind with
// errors.Is, so that an error can carry Nomad's exact text and a
// sentinel.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// KindErrorf returns an error whose text is format's and that
// errors.Is matches to kind (one of the sentinels: ErrNotFound,
// ErrInvalid, ErrConflict...).
func KindErrorf(kind error, format string, a ...any) error {
	return &kindError{msg: fmt.Sprintf(format, a...), kind: kind}
}

// EnforceJobModifyIndex is the check of a check-and-set registration:
// cur (nil when the job does not exist) must have JobModifyIndex want;
// want 0 means the job must not exist. The error wraps ErrConflict.
func EnforceJobModifyIndex(cur *Job, want uint64) error {
	switch {
	case cur == nil && want != 0:
		return KindErrorf(ErrConflict, "enforcing job modify index %d: job does not exist", want)
	case cur != nil && cur.JobModifyIndex != want:
		return KindErrorf(ErrConflict, "enforcing job modify index %d: job exists with conflicting job modify index: %d", want, cur.JobModifyIndex)
	}
	return nil
}

// GenericRequest is a read with nothing to name but its options.
type GenericRequest struct {
	QueryOptions
}

// JobListRequest lists the jobs of Namespace ("*" for all) whose ID
// starts with Prefix.
type JobListRequest struct {
	QueryOptions
}

// JobListResponse lists jobs with their summaries. Index is the higher
// of the jobs' and allocations' tables.
type JobListResponse struct {
	Jobs []*JobListStub
	QueryMeta
}

// JobSpecificRequest names one job (JobID in Namespace) for Job.GetJob,
// Job.Allocations, Job.Evaluations and Job.Summary.
type JobSpecificRequest struct {
	JobID string
	QueryOptions
}

// SingleJobResponse answers Job.GetJob; Index is the job's ModifyIndex.
type SingleJobResponse struct {
	Job *Job
	QueryMeta
}

// JobAllocationsResponse answers Job.Allocations; Index is the newest
// ModifyIndex of the allocations, or the table's when there are none.
type JobAllocationsResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// JobEvaluationsResponse answers Job.Evaluations; Index is the newest
// ModifyIndex of the evaluations, or the table's when there are none.
type JobEvaluationsResponse struct {
	Evaluations []*Evaluation
	QueryMeta
}

// JobSummaryResponse answers Job.Summary; Index is the highest of the
// jobs', allocations' and evaluations' tables.
type JobSummaryResponse struct {
	JobSummary *JobSummary
	QueryMeta
}

// JobScaleRequest sets the count of one group of a job (Nomad's
// ScalingRequest). With EnforceIndex the job's JobModifyIndex must be
// JobModifyIndex when the change applies. It is answered with a
// JobRegisterResponse.
type JobScaleRequest struct {
	JobID          string
	Group          string
	Count          *int
	EnforceIndex   bool
	JobModifyIndex uint64
	Message        string
	WriteRequest
}

// AllocListRequest lists the allocations of Namespace ("*" for all)
// whose ID starts with Prefix.
type AllocListRequest struct {
	QueryOptions
}

// AllocListResponse lists allocation stubs; Index is the allocations'
// table's.
type AllocListResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// AllocSpecificRequest names one allocation by ID or unique ID prefix,
// in any namespace.
type AllocSpecificRequest struct {
	AllocID string
	QueryOptions
}

// SingleAllocResponse answers Alloc.GetAlloc; Index is the allocation's
// ModifyIndex.
type SingleAllocResponse struct {
	Alloc *Allocation
	QueryMeta
}

// EvalListRequest lists the evaluations of Namespace ("*" for all) whose
// ID starts with Prefix.
type EvalListRequest struct {
	QueryOptions
}

// EvalListResponse lists evaluations; Index is the evaluations' table's.
type EvalListResponse struct {
	Evaluations []*Evaluation
	QueryMeta
}

// EvalSpecificRequest names one evaluation by ID or unique ID prefix, in
// any namespace.
type EvalSpecificRequest struct {
	EvalID string
	QueryOptions
}

// SingleEvalResponse answers Eval.GetEval; Index is the evaluation's
// ModifyIndex.
type SingleEvalResponse struct {
	Eval *Evaluation
	QueryMeta
}

// EvalAllocationsResponse answers Eval.Allocations; Index is the
// allocations' table's.
type EvalAllocationsResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// NodeListRequest lists the nodes whose ID starts with Prefix.
type NodeListRequest struct {
	QueryOptions
}

// NodeListResponse lists node stubs; Index is the nodes' table's.
type NodeListResponse struct {
	Nodes []*NodeListStub
	QueryMeta
}

// SingleNodeResponse answers Node.GetNode (NodeSpecificRequest, NodeID
// an ID or unique prefix): the node without its SecretID; Index is its
// ModifyIndex.
type SingleNodeResponse struct {
	Node *Node
	QueryMeta
}

// GPUSummaryResponse answers GPU.Summary (GenericRequest); Index is the
// higher of the nodes' and allocations' tables.
type GPUSummaryResponse struct {
	Summary *GPUSummary
	QueryMeta
}
