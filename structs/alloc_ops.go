package structs

// RPCAllocStop stops one allocation so that the scheduler replaces it
// (drover alloc stop).
const RPCAllocStop = "Alloc.Stop"

// AllocStopDescription is the DesiredDescription of a stopped allocation.
const AllocStopDescription = "alloc was stopped by a user"

// AllocStopRequest asks to stop the allocation AllocID (a full ID).
type AllocStopRequest struct {
	AllocID string
	WriteRequest
}

// AllocStopResponse is the reply to Alloc.Stop: the evaluation that
// replaces the allocation.
type AllocStopResponse struct {
	EvalID string
	WriteMeta
}

// AllocRestartRequest is the body of PUT /v1/client/allocation/<id>/restart:
// the task to restart in place, every running task when empty.
type AllocRestartRequest struct {
	TaskName string
}
