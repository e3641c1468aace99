// Package feasible holds the scheduler's node filter and rank stages and
// the Stack that chains them for one task group.
//
// Every stage is a small type with one concern: a Filter rejects a node for
// a reason that never changes during a plan (readiness, datacenter, driver,
// constraints, device constraints); a CandidateFilter rejects a node given
// the allocations proposed on it (distinct hosts); a Fit says whether the
// group still fits and names the exhausted dimension (devices, cpu,
// memory); a Ranker scores a fitting node. Rejections are verdicts with
// reasons, never errors: the reasons become the keys of an
// structs.AllocMetric so a pending job can explain itself.
//
// The package is pure: it reads structs and the allocations the caller
// proposes, and does no I/O, logging or time keeping. It must not import
// the state store or anything above structs.
package feasible
