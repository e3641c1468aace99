// Package structs holds Drover's domain and wire types: jobs, nodes and
// their GPUs, allocations, evaluations and plans, plus the Raft message
// types and the request/response shapes of the RPC layer.
//
// It owns validation (Validate), defaults (Canonicalize) and deep copies
// (Copy). It must not import any other Drover package and must do no I/O:
// everything above it (jobspec, api, server, client) meets here.
package structs
