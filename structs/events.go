package structs

import (
	"encoding/json"
	"sync"
)

// The event stream (/v1/event/stream): what changed in the servers'
// state, in Nomad's shape, one frame per Raft index.

// RPCEventStream is the streaming call that subscribes to a server's
// event buffer: EventStreamRequest -> StreamMsg{Data: one NDJSON frame}...
// A server serves it itself (every server has its own buffer); a
// client-only agent sends it to the server it is connected to.
const RPCEventStream = "Event.Stream"

// Event topics. TopicAll in a subscription selects every topic.
const (
	TopicJob        = "Job"
	TopicAllocation = "Allocation"
	TopicEvaluation = "Evaluation"
	TopicNode       = "Node"
	TopicDeployment = "Deployment"
	TopicQuota      = "Quota"
	TopicQueue      = "Queue"
	TopicGPU        = "GPU"
	TopicService    = "Service"
	TopicAll        = "*"
)

// Event types, Nomad's names where Nomad has the event.
const (
	TypeJobRegistered                 = "JobRegistered"
	TypeJobDeregistered               = "JobDeregistered"
	TypeJobStatusUpdated              = "JobStatusUpdated"
	TypeAllocationCreated             = "AllocationCreated"
	TypeAllocationUpdated             = "AllocationUpdated"
	TypeAllocationUpdateDesiredStatus = "AllocationUpdateDesiredStatus"
	TypeEvalUpdated                   = "EvaluationUpdated"
	TypeNodeRegistration              = "NodeRegistration"
	TypeNodeDeregistration            = "NodeDeregistration"
	TypeNodeEvent                     = "NodeEvent"
	TypeQuotaUpserted                 = "QuotaUpserted"
	TypeQuotaDeleted                  = "QuotaDeleted"
	TypeQueueUpserted                 = "QueueUpserted"
	TypeQueueDeleted                  = "QueueDeleted"
	TypeServiceRegistration           = "ServiceRegistration"
	TypeServiceDeregistration         = "ServiceDeregistration"
	TypeGPUHealthChanged              = "GPUHealthChanged"
)

// Event is one change, as Nomad's api.Event decodes it. Key is the
// object's ID (a job's, an allocation's, a GPU's UUID); FilterKeys are
// other IDs a subscription may select it by (an allocation's job). The
// Payload holds the object under its kind's name ({"Job": ...},
// {"Allocation": ...}), with secrets removed.
type Event struct {
	Topic      string
	Type       string
	Key        string
	Namespace  string `json:",omitempty"`
	FilterKeys []string
	Index      uint64
	Payload    map[string]any

	// enc, when set (ShareJSON), is the event's JSON, encoded once for
	// every copy of the event.
	enc *eventJSON
}

type eventJSON struct {
	once sync.Once
	b    []byte
	err  error
}

// ShareJSON makes e and the copies made of it from now on encode their
// JSON once, on the first JSON call of any of them: the event stream
// sends one event to every subscriber. The event must not change after.
func (e *Event) ShareJSON() { e.enc = &eventJSON{} }

// JSON returns the event's JSON encoding.
func (e *Event) JSON() ([]byte, error) {
	if e.enc == nil {
		return json.Marshal(e)
	}
	enc := e.enc
	enc.once.Do(func() { enc.b, enc.err = json.Marshal(e) })
	return enc.b, enc.err
}

// EventFrame is one NDJSON line of the stream: the events of one index
// that the subscription selects. A frame with neither is a heartbeat,
// written as {}.
type EventFrame struct {
	Index  uint64  `json:",omitempty"`
	Events []Event `json:",omitempty"`
}

// EventStreamRequest subscribes to the event stream. Topics maps a
// topic (or TopicAll) to the keys it selects ("*" selects every key).
// Namespace selects events of one namespace, or of every namespace the
// token may read with "*"; events without a namespace (nodes, GPUs,
// quotas, queues) pass it. Index resumes: only events of a later index
// are sent.
type EventStreamRequest struct {
	Topics    map[string][]string
	Namespace string
	Index     uint64
}
