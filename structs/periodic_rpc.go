package structs

import "time"

// RPC methods of periodic and parameterized jobs.
const (
	RPCPeriodicForce = "Periodic.Force"
	RPCJobDispatch   = "Job.Dispatch"
)

// PeriodicForceRequest launches a periodic job's child now.
type PeriodicForceRequest struct {
	JobID string
	WriteRequest
}

// PeriodicForceResponse is Nomad's: the child's evaluation.
type PeriodicForceResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	WriteMeta
}

// JobDispatchRequest instantiates a parameterized job (Nomad's shape;
// Payload is base64 in JSON).
type JobDispatchRequest struct {
	JobID            string
	Payload          []byte
	Meta             map[string]string
	IdPrefixTemplate string //nolint:revive // Nomad's field name
	Priority         int
	WriteRequest
}

// JobDispatchResponse names the dispatched child and its evaluation.
type JobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	WriteMeta
}

// PeriodicLaunchUpsertRequestType records a periodic parent's launch.
const PeriodicLaunchUpsertRequestType MessageType = 80

// PeriodicLaunch is the last launch of a periodic parent (Nomad's
// periodic_launch table), so that a new leader resumes after it.
type PeriodicLaunch struct {
	Namespace   string
	ID          string
	Launch      time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// PeriodicLaunchUpsertRequest stores a launch.
type PeriodicLaunchUpsertRequest struct {
	Launch *PeriodicLaunch
	WriteRequest
}
