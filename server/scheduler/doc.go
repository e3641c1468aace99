// Package scheduler turns an evaluation into a plan: it reconciles a
// job's allocations with what the job asks for, places what is missing
// through each group's placement chain (feasible.NewStack lists its
// stages; this package supplies those that read state: reservations,
// preemption, the quota and queue gates), applies the gang rule to the
// whole plan, submits the plan, and records the outcome on the evaluation
// (with a blocked evaluation when something could not be placed).
//
// It sees the cluster only through its own small interfaces: State
// (composed of ClusterState, UsageState, TallyState, QuotaState,
// QueueState and ReservationState, every part required) and Planner. It
// reads a snapshot and proposes, and never writes state, opens sockets,
// reads the wall clock (time is injected) or logs through a global. The
// leader's plan applier decides what commits.
//
// GenericScheduler runs service and batch jobs, SystemScheduler system and
// sysbatch jobs (one allocation per matching node).
// See README.md for the flow.
package scheduler
