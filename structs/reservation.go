package structs

import (
	"maps"
	"time"
)

// Reservation is what a waiting gang holds (structs.Gang): the nodes it
// means to use, whose free GPUs no job of its priority or lower may take
// while it waits, so that a stream of small jobs cannot starve it. The
// gang's scheduler writes it with the plan that holds the gang back, and
// drops it with the plan that places the gang, or once ExpireTime (its
// first creation plus the gang's timeout) has passed.
type Reservation struct {
	Namespace string
	JobID     string
	Priority  int
	// Nodes are the node IDs held; Counts how many of each node's GPUs
	// (the gang's share of it); GPUs is how many GPUs the gang waits for
	// in all.
	Nodes  []string
	Counts map[string]int
	GPUs   int
	// CreateTime and ExpireTime are Unix nanoseconds.
	CreateTime int64
	ExpireTime int64
	// ReadyAt is when the held nodes are expected to have the GPUs the
	// gang waits for, from the max_run_time of the allocations holding
	// them (Unix nanoseconds; 0: not known, some never end by
	// themselves). Jobs that will end before it may backfill (Backfills).
	ReadyAt int64

	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a copy of r.
func (r *Reservation) Copy() *Reservation {
	if r == nil {
		return nil
	}
	c := *r
	c.Nodes = append([]string(nil), r.Nodes...)
	c.Counts = maps.Clone(r.Counts)
	return &c
}

// HeldOn is how many of the node's GPUs the reservation holds: its count
// there (all of them when it has no counts).
func (r *Reservation) HeldOn(nodeID string) int {
	if n, ok := r.Counts[nodeID]; ok {
		return n
	}
	return -1
}

// Live reports whether the reservation still holds at now.
func (r *Reservation) Live(now time.Time) bool { return r != nil && now.UnixNano() < r.ExpireTime }

// Backfills reports whether job may use the reservation's GPUs anyway:
// it declares a max_run_time that ends, counted from now, before the
// reservation's nodes are expected ready.
func (r *Reservation) Backfills(job *Job, now time.Time) bool {
	return job != nil && job.MaxRunTime > 0 && r.ReadyAt > 0 && now.Add(job.MaxRunTime).UnixNano() <= r.ReadyAt
}

// Holds reports whether the reservation keeps job's placements off its
// nodes: it is another job's, live at now, and of the same or a higher
// priority.
func (r *Reservation) Holds(job *Job, now time.Time) bool {
	if !r.Live(now) || job == nil {
		return false
	}
	if r.Namespace == job.Namespace && r.JobID == job.ID {
		return false
	}
	return r.Priority >= job.Priority
}
