package structs

// GarbageCollectRequestType is the Raft entry that deletes what the
// leader's garbage collection chose (server/gc.go). It is numbered apart
// from the others; never renumber it.
const GarbageCollectRequestType MessageType = 60

// RPCSystemGarbageCollect runs a full garbage collection now, ignoring
// the age thresholds (Nomad's force GC): SystemGCRequest ->
// GenericResponse. It needs a management token.
const RPCSystemGarbageCollect = "System.GarbageCollect"

// GCMaxBatch caps how many objects one GarbageCollectRequest deletes, so
// no Raft entry grows without bound.
const GCMaxBatch = 1000

// GCJob names a job to collect at the ModifyIndex the leader saw: the FSM
// keeps a job that changed since (re-registered, say).
type GCJob struct {
	Namespace, ID string
	ModifyIndex   uint64
}

// GCNode names a down node to collect at the ModifyIndex the leader saw.
type GCNode struct {
	ID          string
	ModifyIndex uint64
}

// GarbageCollectRequest deletes jobs, evaluations, allocations and nodes
// the leader found collectable. The FSM deletes each only if it is still
// collectable as it applies the entry: an evaluation or allocation only
// while terminal, a job or node only at the ModifyIndex named.
type GarbageCollectRequest struct {
	Jobs   []GCJob
	Evals  []string
	Allocs []string
	Nodes  []GCNode
	// ACLTokens are expired tokens, each at the ModifyIndex the leader
	// saw (a token's expiry never changes, so it is still expired).
	ACLTokens []GCNode
	WriteRequest
}

// Len is how many objects the request names.
func (r *GarbageCollectRequest) Len() int {
	return len(r.Jobs) + len(r.Evals) + len(r.Allocs) + len(r.Nodes) + len(r.ACLTokens)
}

// SystemGCRequest asks for a full garbage collection now.
type SystemGCRequest struct {
	WriteRequest
}

// Collectable reports whether an allocation is finished for good: its
// client finished it, or the servers stopped it before its client
// started it. An allocation told to stop that still runs is not.
func (a *Allocation) Collectable() bool {
	return a.ClientTerminalStatus() ||
		(a.DesiredStatus != AllocDesiredStatusRun && a.ClientStatus == AllocClientStatusPending)
}
