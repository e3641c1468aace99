// Package sim replays a workload against a simulated cluster with the real
// scheduler: nodes and pods from the Alibaba GPU trace (v2023, "openb")
// CSV files or a synthetic cluster, a real in-memory state store
// (server/state), the real batch scheduler (server/scheduler), and a
// Planner that re-checks and commits plans the way the leader's plan
// applier does (server/plan's Evaluate, then the plan-results write), with
// no Raft and no network. It reports what was placed, the GPU allocation
// ratio, fragmentation (server/scheduler/frag) and placement latency.
//
// It owns the trace loaders, the trace-to-structs mapping, the arrival
// order and the replay loop; it must not decide placements itself, touch
// the network or the file system beyond the CSV files it is asked to
// read, or import test-only packages (schedtest).
package sim
