package scheduler

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/server/scheduler/frag"
	"github.com/droverhq/drover/structs"
)

// State is the read-only view of the cluster a scheduler works from: one
// small interface per concern, every part required. It is satisfied by
// *state.StateSnapshot (schedtest checks it). Returned objects must not
// be mutated.
type State interface {
	ClusterState
	UsageState
	TallyState
	QuotaState
	QueueState
	ReservationState
	DeploymentState
}

// DeploymentState is what the scheduler reads of deployments
// (deployment.go): the job's newest one.
type DeploymentState interface {
	LatestDeploymentByJob(ws memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error)
}

// ClusterState is what reconciling and placing read: jobs, nodes, their
// allocations, the snapshot's index and the operator's scheduler
// configuration.
type ClusterState interface {
	Nodes(ws memdb.WatchSet) ([]*structs.Node, error)
	NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error)
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Allocation, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	LatestIndex() (uint64, error)
	// SchedulerConfig returns the configuration the operator set
	// (/v1/operator/scheduler/configuration), or the default one; never
	// nil without an error.
	SchedulerConfig() (*structs.SchedulerConfiguration, error)
}

// UsageState is the state store's derived view of what nodes hold
// (server/state/usage.go), which the placer walks: per-node usage in one
// lookup, and the nodes fullest first.
type UsageState interface {
	NodeUsage(ws memdb.WatchSet, nodeID string) (*structs.NodeUsage, error)
	// UsageByFreeGPUs and UsageByFreeCompute return the rows in order,
	// one per call of next (nil at the end), as of the call.
	UsageByFreeGPUs(min int) (next func() *structs.NodeUsage, err error)
	UsageByFreeCompute(min int) (next func() *structs.NodeUsage, err error)
	// The Desc variants walk the same rows most free first.
	UsageByFreeGPUsDesc(min int) (next func() *structs.NodeUsage, err error)
	UsageByFreeComputeDesc(min int) (next func() *structs.NodeUsage, err error)
	UsageUnderFreeGPUs(max int, fn func(*structs.NodeUsage) bool) error
	UsageUnderFreeCompute(max int, fn func(*structs.NodeUsage) bool) error
}

// TallyState is what the state store counts over every live allocation,
// so that a placement needs no walk over the cluster for it.
type TallyState interface {
	// GPUWorkload is the live allocations' GPU asks, the workload the
	// fragmentation stage expects more of.
	GPUWorkload() (frag.Workload, error)
	// LivePriorities counts live allocations per job priority, so the
	// preemption stage knows when nothing is low enough to preempt.
	LivePriorities() (map[int]int, error)
}

// QuotaState is what the quota stage reads: a namespace's quota and what
// the namespaces under that quota hold (server/state/quota.go).
type QuotaState interface {
	NamespaceByName(ws memdb.WatchSet, name string) (*structs.Namespace, error)
	QuotaSpecByName(ws memdb.WatchSet, name string) (*structs.QuotaSpec, error)
	QuotaUsage(ws memdb.WatchSet, name string) (*structs.QuotaUsage, error)
	// QuotaChargeOf is what a live allocation counts against its
	// namespace's quota (nil: nothing).
	QuotaChargeOf(allocID string) (*structs.QuotaCharge, error)
}

// QueueState is what the fair-share queue stage reads
// (server/state/queue*.go).
type QueueState interface {
	// Queues returns the queues, the implicit "default" included.
	Queues() ([]*structs.Queue, error)
	// QueueUsage returns, per queue, the GPUs its live allocations hold
	// and how many of its jobs wait in a blocked evaluation.
	QueueUsage() (map[string]structs.QueueUsage, error)
	// ClusterGPUs counts the healthy GPUs of ready, eligible nodes.
	ClusterGPUs() (int, error)
}

// ReservationState holds waiting gangs' reservations
// (structs.Reservation), which the reservation stage and the gang rule
// read.
type ReservationState interface {
	Reservations() ([]*structs.Reservation, error)
}
