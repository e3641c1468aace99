package structs

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MessageType is the first byte of every Raft log entry; the rest is the
// msgpack-encoded request.
type MessageType uint8

// Raft message types. Never renumber: they are in users' logs and snapshots.
const (
	NodeRegisterRequestType      MessageType = 0
	NodeUpdateStatusRequestType  MessageType = 1
	JobRegisterRequestType       MessageType = 2
	JobDeregisterRequestType     MessageType = 3
	EvalUpdateRequestType        MessageType = 4
	AllocClientUpdateRequestType MessageType = 5
	ApplyPlanResultsRequestType  MessageType = 6
	NodeDeregisterRequestType    MessageType = 7

	// ApplyPlanResultsJobOnceRequestType is ApplyPlanResultsRequest with
	// the plan's job once (Job, AllocsStopped, AllocsPlaced) and
	// NodeUpdateStatusLosingRequestType a NodeUpdateStatusRequest whose
	// node, going down, has its stopped allocations marked lost. They are
	// new types, not new fields or effects on types 6 and 1: a server that
	// predates them stops at such an entry (an unknown type panics) instead
	// of applying it without them and holding other state than its peers.
	// Upgrade every server before the leader writes them.
	ApplyPlanResultsJobOnceRequestType MessageType = 8
	NodeUpdateStatusLosingRequestType  MessageType = 9
)

// IgnoreUnknownTypeFlag marks a message type that older servers may skip
// instead of panicking.
const IgnoreUnknownTypeFlag MessageType = 128

// MsgpackMaxDepth bounds how deep maps and arrays may nest in msgpack
// that MsgpackHandle decodes. The deepest legitimate value is a task's
// driver config (limits.task_config_max_depth, at most
// TaskConfigMaxDepthCap) inside a job inside an allocation inside a
// message: about ten levels more.
const MsgpackMaxDepth = 96

// TaskConfigMaxDepthCap is the most limits.task_config_max_depth may be:
// a deeper config could not cross RPC or Raft (MsgpackMaxDepth).
const TaskConfigMaxDepthCap = MsgpackMaxDepth - 32

// MsgpackHandle is the codec handle for RPC and for encoding Raft
// entries and snapshots: every msgpack Drover decodes from the network
// goes through it (what the FSM decodes from its own log and snapshots
// goes through RaftMsgpackHandle).
// (hashicorp/raft's transport decodes its own messages with its own
// handle at the codec's defaults; they hold no interface values, so
// their nesting and allocation are bounded by their types.)
//
// Its decoder is bounded against hostile bytes, before and after
// authentication (the RPC port decodes a request before it checks the
// token). Nesting past MsgpackMaxDepth is an error: the codec's default
// depth, 1024, let 5 KB of nested arrays in a task config make a decode
// allocate 255 MB. Initial allocation is the codec's own bound
// (MaxInitLen 0): whatever length a peer declares for an array, map or
// string, at most 256 KiB (4096 elements of large types) is made before
// the elements arrive, and more only as they do; each level of nesting
// can cost that much, so a message costs at most MsgpackMaxDepth times
// it (about 60 MB of maps[string]any, measured). A count bound
// (MaxInitLen > 0) would grow strings longer than it by that many bytes
// at a time, copying each time: with 4096, a 1 MiB string took 220 ms
// to decode instead of 7 ms.
var MsgpackHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	h.MaxDepth = MsgpackMaxDepth
	return h
}()

// Encode returns t followed by msg in msgpack.
func Encode(t MessageType, msg any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(uint8(t))
	if err := codec.NewEncoder(&buf, MsgpackHandle).Encode(msg); err != nil {
		return nil, fmt.Errorf("encode %d: %w", t, err)
	}
	return buf.Bytes(), nil
}

// Decode decodes msgpack buf into out.
func Decode(buf []byte, out any) error {
	return codec.NewDecoder(bytes.NewReader(buf), MsgpackHandle).Decode(out)
}

// RaftMsgpackMaxDepth is the nesting RaftMsgpackHandle allows: the
// codec's default, which bounded Raft entries and snapshots before
// MsgpackMaxDepth existed. Entries are the leader's, written after the
// limits were checked; a store written by an earlier version (a task
// config deeper than MsgpackMaxDepth allows, from before
// task_config_max_depth was capped) must still replay, or the server
// could not start.
const RaftMsgpackMaxDepth = 1024

// RaftMsgpackHandle is MsgpackHandle for what the FSM decodes: Raft log
// entries and snapshots (an uploaded archive is checked with it too;
// uploading one takes a management token), never an RPC request.
var RaftMsgpackHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = MsgpackHandle.MapType
	h.MaxDepth = RaftMsgpackMaxDepth
	return h
}()

// DecodeEntry decodes the body of a Raft log entry (RaftMsgpackHandle).
func DecodeEntry(buf []byte, out any) error {
	return codec.NewDecoder(bytes.NewReader(buf), RaftMsgpackHandle).Decode(out)
}

// QueryOptions are the common read options: blocking, stale reads, filters.
type QueryOptions struct {
	Region    string
	Namespace string
	// AuthToken is the caller's ACL token secret ("" is anonymous).
	AuthToken     string
	MinQueryIndex uint64
	MaxQueryTime  time.Duration
	AllowStale    bool
	Prefix        string

	// ctx is the in-process caller's context (SetContext): a blocking
	// query ends when it does. It never crosses the wire.
	ctx context.Context
}

// SetContext ties a read made in process to the caller's context, so a
// blocking query ends when the caller goes away (an HTTP client that
// disconnected). Every request that embeds QueryOptions has it.
func (q *QueryOptions) SetContext(ctx context.Context) { q.ctx = ctx }

// Context is the caller's context, or context.Background().
func (q QueryOptions) Context() context.Context {
	if q.ctx == nil {
		return context.Background()
	}
	return q.ctx
}

// QueryMeta is returned with every read.
type QueryMeta struct {
	Index       uint64
	LastContact time.Duration
	KnownLeader bool
}

// WriteRequest carries the common write options.
type WriteRequest struct {
	Region    string
	Namespace string
	// AuthToken is the caller's ACL token secret ("" is anonymous).
	AuthToken string
}

// WriteMeta is returned with every write.
type WriteMeta struct {
	Index uint64
}

// JobRegisterRequest registers (or updates) a job; the server attaches the
// evaluation it creates so both commit in one Raft entry.
type JobRegisterRequest struct {
	Job  *Job
	Eval *Evaluation
	// EnforceIndex makes the registration check-and-set: it applies only
	// if the job's JobModifyIndex is JobModifyIndex (0: the job does not
	// exist) when its Raft entry applies, else it fails with ErrConflict
	// (EnforceJobModifyIndex).
	EnforceIndex   bool
	JobModifyIndex uint64
	WriteRequest
}

// JobRegisterResponse answers a registration.
type JobRegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	QueryMeta
}

// JobDeregisterRequest stops (or with Purge removes) a job.
type JobDeregisterRequest struct {
	JobID string
	Purge bool
	Eval  *Evaluation
	WriteRequest
}

// JobDeregisterResponse answers a deregistration.
type JobDeregisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	QueryMeta
}

// EvalUpdateRequest upserts evaluations (status changes, blocked evals).
type EvalUpdateRequest struct {
	Evals []*Evaluation
	WriteRequest
}

// NodeRegisterRequest registers or re-registers a node.
type NodeRegisterRequest struct {
	Node *Node
	// Evals are created by the server for jobs that may use the node.
	Evals []*Evaluation
	WriteRequest
}

// NodeUpdateResponse answers node registration and heartbeats.
type NodeUpdateResponse struct {
	HeartbeatTTL time.Duration
	// Servers lists the servers' RPC addresses for the client to use.
	Servers []string
	Index   uint64
}

// NodeUpdateStatusRequest changes a node's status (heartbeats use it with
// NodeStatusReady).
type NodeUpdateStatusRequest struct {
	NodeID string
	// SecretID proves the caller is the node.
	SecretID  string
	Status    string
	UpdatedAt int64
	Evals     []*Evaluation
	WriteRequest
}

// NodeDeregisterRequest removes a node.
type NodeDeregisterRequest struct {
	NodeID string
	WriteRequest
}

// NodeSpecificRequest is a read about one node; with MinQueryIndex it
// blocks until the node's allocations change.
type NodeSpecificRequest struct {
	NodeID   string
	SecretID string
	QueryOptions
}

// NodeAllocsResponse returns a node's allocations.
type NodeAllocsResponse struct {
	Allocs []*Allocation
	QueryMeta
}

// AllocUpdateRequest carries client-side allocation updates (ClientStatus,
// TaskStates) from a client to the servers.
type AllocUpdateRequest struct {
	// NodeID and SecretID name and prove the node reporting: it may
	// update its own allocations only.
	NodeID   string
	SecretID string
	Alloc    []*Allocation
	// Evals are created by the server when an update frees capacity or a
	// task failed.
	Evals []*Evaluation
	WriteRequest
}

// ApplyPlanResultsRequest commits a plan's accepted part. The plan's job
// travels once, in Job, not once per allocation: a Raft entry of a job of
// size S with count N is about S, not N*S. Entries that use Job,
// AllocsStopped and AllocsPlaced are written as
// ApplyPlanResultsJobOnceRequestType, so that a server built before them
// stops at the entry instead of applying it without its allocations.
type ApplyPlanResultsRequest struct {
	// Job is the plan's job; each allocation of AllocsPlaced without a
	// Job takes it. Nil in entries written before it existed.
	Job *Job
	// AllocsStopped are stops (and preemptions, lost marks) of existing
	// allocations, stamped, without their Job: each keeps the one in
	// state. A stop of an allocation no longer in state is dropped.
	AllocsStopped []*Allocation
	// AllocsPlaced are placements and in-place updates, stamped; those
	// of the plan's job carry no Job on the wire (they take Job).
	AllocsPlaced []*Allocation
	// Allocs holds placements and stops each with its own Job, as entries
	// written before AllocsStopped and AllocsPlaced carried them (and
	// single stops outside a plan). Applied first, as it always was.
	Allocs []*Allocation
	// EvalID is the evaluation the plan belongs to.
	EvalID string
	// PreemptionEvals evaluate the jobs whose allocations the plan
	// preempts, so they are replaced when there is room.
	PreemptionEvals []*Evaluation
	// EvalUpdate is the plan's evaluation as it ends, written with the
	// results (Plan.EvalUpdate), or nil.
	EvalUpdate *Evaluation
	// Reservation is stored; ReleaseReservation (with Namespace and JobID)
	// drops the job's (the plan's gang reservation, structs.Reservation).
	Reservation        *Reservation
	ReleaseReservation bool
	Namespace, JobID   string
	// Deployment and DeploymentUpdates are the plan's (entries of
	// ApplyPlanResultsDeploymentRequestType only).
	Deployment        *Deployment               `json:",omitempty"`
	DeploymentUpdates []*DeploymentStatusUpdate `json:",omitempty"`
	WriteRequest
}

// GenericResponse is the reply to a write with nothing else to say.
type GenericResponse struct {
	WriteMeta
}

// RPC stream types: the first byte a peer writes on a connection to the
// RPC port picks the protocol that follows.
const (
	RPCTypeRPC  byte = 0x01 // net/rpc with the msgpack codec
	RPCTypeRaft byte = 0x02 // hashicorp/raft network transport
	// RPCTypeMultiplex is a hashicorp/yamux session (the dialer is the
	// yamux client); every stream the dialer opens on it carries one
	// net/rpc exchange with the msgpack codec. Servers forward to each
	// other on it.
	RPCTypeMultiplex byte = 0x03
	// RPCTypeTLS starts a TLS handshake (the dialer is the TLS client);
	// inside it the dialer writes one of the other types. With rpc TLS
	// on, a server accepts nothing else.
	RPCTypeTLS byte = 0x04
	// RPCTypeNodeMultiplex is RPCTypeMultiplex from a node's client: the
	// servers also open streams on it, for client operations on that
	// node's allocations.
	RPCTypeNodeMultiplex byte = 0x05
)

// RPC method names (net/rpc "Service.Method").
const (
	RPCStatusPing       = "Status.Ping"
	RPCStatusReadIndex  = "Status.ReadIndex"
	RPCNodeRegister     = "Node.Register"
	RPCNodeUpdateStatus = "Node.UpdateStatus"
	RPCNodeGetAllocs    = "Node.GetAllocs"
	RPCNodeUpdateAlloc  = "Node.UpdateAlloc"
	RPCJobRegister      = "Job.Register"
	RPCJobDeregister    = "Job.Deregister"
)
