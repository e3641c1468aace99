// Package feasible holds every stage of the scheduler's placement chain
// and NewStack, the one constructor that lists them in order for a task
// group (chain.go); Stack.Place runs them for one placement.
//
// Every stage is a small type with one concern: a Filter rejects a node for
// a reason that never changes during a plan (readiness, datacenter, driver,
// constraints, device constraints); a CandidateFilter rejects a node given
// the allocations proposed on it (distinct hosts, distinct property); a
// Fit says whether the group still fits and names the exhausted dimension
// (cpu, memory, devices, with the TopologyPicker choosing which GPUs); a
// Ranker scores a fitting node (bin-pack, fragmentation, affinities,
// spread). Rejections are verdicts with reasons, never errors: the reasons
// become the keys of an structs.AllocMetric so a pending job can explain
// itself.
//
// Stages that need what only the scheduler reads (a waiting gang's
// reservations, preemption, the namespace's quota, the fair-share queue)
// are interfaces this package owns (Reservations, Preempter, Gate); the
// scheduler implements them and hands them to NewStack, which puts them in
// their place in the chain.
//
// The package is pure: it reads structs, the View the scheduler gives it
// and those stages, and does no I/O, logging or time keeping. It must not
// import the state store or anything above structs.
package feasible
