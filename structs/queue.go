package structs

import (
	"errors"
	"fmt"
)

// Raft message types of fair-share queues. They are numbered apart from
// the other ranges (rpc.go, operator.go, namespace.go) so that types
// added there in the meantime do not collide with them; never renumber.
const (
	QueueUpsertRequestType MessageType = 40
	QueueDeleteRequestType MessageType = 41
)

// RPC methods of the queue endpoint.
const (
	RPCQueueUpsert = "Queue.Upsert"
	RPCQueueDelete = "Queue.Delete"
	RPCQueueGet    = "Queue.Get"
	RPCQueueList   = "Queue.List"
)

// DefaultQueue is the queue of jobs that name none. It always exists:
// until an operator changes it, it is DefaultQueueObject and is not
// stored. It cannot be deleted.
const DefaultQueue = "default"

// Bounds of a queue's settings.
const (
	QueueMinWeight = 1
	QueueMaxWeight = 1000
	// queueMaxGPUs bounds GuaranteedGPUs and MaxGPUs, so that sums of them
	// in GPU compute percent (WholeGPU each) cannot overflow.
	queueMaxGPUs = 1 << 20
)

// Errors of queue writes; each wraps ErrInvalid so that the HTTP API
// answers 400.
var (
	// ErrQueueInUse refuses to delete a queue that jobs still name.
	ErrQueueInUse = fmt.Errorf("queue has jobs: %w", ErrInvalid)
	// ErrDefaultQueue refuses to delete the default queue.
	ErrDefaultQueue = fmt.Errorf("the default queue cannot be deleted: %w", ErrInvalid)
)

// Queue is a fair-share queue. Jobs name one (Job.Queue, "" for
// DefaultQueue); when GPUs are contended, the scheduler admits waiting
// work so that each active queue's GPU share follows its Weight
// (FairShares), guarantees GuaranteedGPUs while the queue asks for them,
// and never lets the queue hold more than MaxGPUs.
type Queue struct {
	Name        string
	Description string
	// Weight is the queue's relative share of contended GPUs, 1 to 1000
	// (Canonicalize makes 0 the default, 1).
	Weight int
	// GuaranteedGPUs the queue gets whenever it asks for them; idle
	// guaranteed GPUs may be borrowed by other queues and are reclaimed.
	GuaranteedGPUs int
	// MaxGPUs caps what the queue's allocations hold together; 0 means
	// unlimited. A fractional GPU counts as its compute share.
	MaxGPUs int

	CreateIndex uint64
	ModifyIndex uint64
}

// DefaultQueueObject returns the default queue as it is before an operator
// changes it: weight 1, nothing guaranteed, no maximum.
func DefaultQueueObject() *Queue {
	return &Queue{Name: DefaultQueue, Description: "Jobs that name no queue", Weight: QueueMinWeight}
}

// QueueName returns the queue a job's Queue field names: name, or
// DefaultQueue when it is empty.
func QueueName(name string) string {
	if name == "" {
		return DefaultQueue
	}
	return name
}

// ValidQueueName reports whether name has the shape of a queue name: 1 to
// 128 letters, digits or dashes, like namespace names.
func ValidQueueName(name string) bool { return validObjectName.MatchString(name) }

// Canonicalize fills defaults in place: a Weight of 0 becomes 1.
func (q *Queue) Canonicalize() {
	if q.Weight == 0 {
		q.Weight = QueueMinWeight
	}
}

// Validate checks the name, description, weight and GPU bounds of a
// canonicalized queue; an error names the field and wraps ErrInvalid.
func (q *Queue) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("queue %q: "+format+": %w", append(append([]any{q.Name}, args...), ErrInvalid)...))
	}
	if !ValidQueueName(q.Name) {
		bad("name: want 1 to 128 letters, digits or dashes")
	}
	if len(q.Description) > maxDescriptionLength {
		bad("description is %d characters, at most %d", len(q.Description), maxDescriptionLength)
	}
	if q.Weight < QueueMinWeight || q.Weight > QueueMaxWeight {
		bad("weight %d: want %d to %d", q.Weight, QueueMinWeight, QueueMaxWeight)
	}
	switch {
	case q.GuaranteedGPUs < 0:
		bad("guaranteed GPUs %d: must not be negative", q.GuaranteedGPUs)
	case q.GuaranteedGPUs > queueMaxGPUs:
		bad("guaranteed GPUs %d: at most %d", q.GuaranteedGPUs, queueMaxGPUs)
	}
	switch {
	case q.MaxGPUs < 0:
		bad("max GPUs %d: must not be negative (0 is unlimited)", q.MaxGPUs)
	case q.MaxGPUs > queueMaxGPUs:
		bad("max GPUs %d: at most %d", q.MaxGPUs, queueMaxGPUs)
	case q.MaxGPUs > 0 && q.MaxGPUs < q.GuaranteedGPUs:
		bad("max GPUs %d is below the %d guaranteed", q.MaxGPUs, q.GuaranteedGPUs)
	}
	return errors.Join(errs...)
}

// CheckShape returns an error wrapping ErrInvalid for a missing queue: the
// only input that would crash a copy or a check (a Queue holds no
// pointers).
func (q *Queue) CheckShape() error {
	if q == nil {
		return fmt.Errorf("queue: missing: %w", ErrInvalid)
	}
	return nil
}

// Copy returns a copy.
func (q *Queue) Copy() *Queue {
	if q == nil {
		return nil
	}
	c := *q
	return &c
}

// QueueUsage is what a queue's work holds and asks for now, derived by the
// state store in the same transactions as the allocations, evaluations
// and jobs.
type QueueUsage struct {
	Queue string
	// GPUs held by the queue's live (placed, non-terminal) allocations; a
	// fractional GPU counts as its compute share (a 25% slice is 0.25).
	GPUs float64
	// Waiting is the number of the queue's jobs with a blocked
	// evaluation.
	Waiting int
}

// Active reports whether the queue takes part in sharing: it holds GPUs
// or has work waiting.
func (u QueueUsage) Active() bool { return u.GPUs > 0 || u.Waiting > 0 }

// FairShares returns the fair share of clusterGPUs of each queue in
// queues that is active (QueueUsage.Active in usage): clusterGPUs ×
// its weight / the sum of the weights of the active queues. Idle queues
// are left out (their share is 0: they ask for nothing). A queue weighs
// at least 1.
func FairShares(queues []*Queue, usage map[string]QueueUsage, clusterGPUs int) map[string]float64 {
	total := 0
	for _, q := range queues {
		if q != nil && usage[q.Name].Active() {
			total += max(q.Weight, QueueMinWeight)
		}
	}
	out := make(map[string]float64)
	if total == 0 {
		return out
	}
	for _, q := range queues {
		if q != nil && usage[q.Name].Active() {
			out[q.Name] = float64(clusterGPUs) * float64(max(q.Weight, QueueMinWeight)) / float64(total)
		}
	}
	return out
}

// QueueStatus is a queue with its usage and fair share, as the queue
// list and read answer it.
type QueueStatus struct {
	Queue *Queue
	Usage QueueUsage
	// Jobs is the number of jobs that name the queue (stopped ones
	// included): a queue with jobs cannot be deleted.
	Jobs int
	// FairShare is the queue's fair share of ClusterGPUs (FairShares); 0
	// while the queue is idle.
	FairShare float64
	// ClusterGPUs is the number of healthy GPUs on ready, eligible nodes.
	ClusterGPUs int
}

// QueueStatuses returns the status of each queue, in the order given,
// with fair shares computed over all of them.
func QueueStatuses(queues []*Queue, usage map[string]QueueUsage, jobs map[string]int, clusterGPUs int) []*QueueStatus {
	shares := FairShares(queues, usage, clusterGPUs)
	out := make([]*QueueStatus, 0, len(queues))
	for _, q := range queues {
		if q == nil {
			continue
		}
		u := usage[q.Name]
		u.Queue = q.Name
		out = append(out, &QueueStatus{Queue: q, Usage: u, Jobs: jobs[q.Name], FairShare: shares[q.Name], ClusterGPUs: clusterGPUs})
	}
	return out
}

// QueueUpsertRequest creates or replaces a queue.
type QueueUpsertRequest struct {
	Queue *Queue
	WriteRequest
}

// QueueDeleteRequest deletes a queue by name.
type QueueDeleteRequest struct {
	Name string
	WriteRequest
}

// QueueSpecificRequest reads one queue.
type QueueSpecificRequest struct {
	Name string
	QueryOptions
}

// SingleQueueResponse answers a QueueSpecificRequest; Queue is nil when
// there is none of that name.
type SingleQueueResponse struct {
	Queue *QueueStatus
	QueryMeta
}

// QueueListRequest lists queues (QueryOptions.Prefix filters by name).
type QueueListRequest struct {
	QueryOptions
}

// QueueListResponse lists queues with their usage, sorted by name.
type QueueListResponse struct {
	Queues []*QueueStatus
	QueryMeta
}
