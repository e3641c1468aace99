// Package server is the server agent's wiring: it opens Raft (BoltDB log,
// file snapshots, a network transport multiplexed on the RPC port), serves
// the RPC endpoints (Status, Node, Job) over TCP and in process, and runs
// the leader's duties: the eval broker and blocked evals, the plan
// applier, scheduler workers, and node heartbeat timers.
//
// Decisions live in the packages it wires (state, fsm, broker, plan,
// scheduler); this package moves requests and evaluations between them and
// owns every goroutine it starts. It must not import the client packages:
// clients meet the server only over the wire.
package server
