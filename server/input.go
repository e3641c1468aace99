package server

import (
	"fmt"
	"runtime/debug"

	"github.com/droverhq/drover/structs"
)

// The checks here keep input that would crash a copy (a nil element in a
// list or map of pointers) out of the endpoints and, above all, out of
// the Raft log: an entry the FSM cannot apply is applied again by every
// server on every restart.

// clientAllocUpdate returns what the servers take from a client's report
// on an allocation: its identity, client status and task states, without
// nil task states or events. A missing allocation or ID is an error
// wrapping structs.ErrInvalid.
func clientAllocUpdate(a *structs.Allocation) (*structs.Allocation, error) {
	if a == nil || a.ID == "" {
		return nil, fmt.Errorf("update allocs: allocation without ID: %w", structs.ErrInvalid)
	}
	u := &structs.Allocation{
		ID: a.ID, Namespace: a.Namespace, NodeID: a.NodeID, JobID: a.JobID,
		ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription,
	}
	if d := a.DeploymentStatus; d != nil && d.Healthy != nil {
		// The client's health decision only; the servers own the rest.
		h := *d.Healthy
		u.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &h, Timestamp: d.Timestamp}
	}
	if a.TaskStates == nil {
		return u, nil
	}
	u.TaskStates = make(map[string]*structs.TaskState, len(a.TaskStates))
	for name, ts := range a.TaskStates {
		if ts == nil {
			continue
		}
		clean := *ts
		clean.Events = nil
		for _, e := range ts.Events {
			if e != nil {
				clean.Events = append(clean.Events, e)
			}
		}
		u.TaskStates[name] = clean.Copy()
	}
	return u, nil
}

// recoverPanic turns a panic in an endpoint into its error, so that input
// no check foresaw cannot take the server down (net/rpc does not recover
// panics). Endpoints defer it with their named error result.
func (s *Server) recoverPanic(method string, err *error) {
	if r := recover(); r != nil {
		s.logger.Error("endpoint panicked", "method", method, "panic", r, "stack", string(debug.Stack()))
		*err = fmt.Errorf("%s: internal error: %v", method, r)
	}
}
