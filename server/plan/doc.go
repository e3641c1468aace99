// Package plan is the leader's plan applier: the one place where the
// schedulers' proposals become allocations. Plans are taken one at a time;
// each node of a plan is re-checked against a fresh state snapshot (node
// ready, CPU, memory, every GPU instance held at most once, newly taken
// GPUs present and healthy) and the nodes that still fit are committed
// through Raft in one ApplyPlanResults entry. Rejected nodes come back in
// the result with a RefreshIndex so the scheduler retries from newer state.
//
// Evaluate is the pure core (state in, verdicts out); Applier adds the
// queue and the Raft commit. Its seams are the Raft it commits through and
// the Check it re-checks with (Evaluate unless WithCheck): the scheduler's
// test harness (schedtest) drives the real Applier with a Raft that
// writes its state store directly and a Check that wraps Evaluate. The
// package reads state but never writes it except through Raft, and knows
// nothing of RPC or the eval broker. It times itself on its own clock
// into go-metrics' global sinks, as raft does: drover.plan.apply (a
// plan's dequeue to its answer), .evaluate (the re-check) and .commit
// (the Raft apply alone).
package plan
