// Package broker holds the leader's in-memory queues of evaluations: the
// EvalBroker, which hands ready evaluations to scheduler workers (highest
// priority first, at most one in flight per job, redelivered when nacked
// or when a worker goes quiet, held back for an evaluation's Wait), and
// BlockedEvals, which parks evaluations that could not place everything
// until cluster capacity changes.
//
// Both are caches of what Raft already holds: the leader fills them from
// state when it gains leadership and flushes them when it loses it. This
// package must not write to Raft or read the state store; the server does
// that with what the broker reports (failed and cancelled evaluations).
package broker
