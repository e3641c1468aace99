package structs

import (
	"fmt"
	"strings"
)

// Scheduler algorithms: how the scheduler ranks the nodes that fit.
const (
	// SchedulerAlgorithmBinpack fills the fullest nodes first.
	SchedulerAlgorithmBinpack = "binpack"
	// SchedulerAlgorithmSpread prefers the emptiest nodes.
	SchedulerAlgorithmSpread = "spread"
	// SchedulerAlgorithmFGD is fragmentation-aware: it prefers the node
	// and GPUs whose use least harms what the cluster can still place.
	SchedulerAlgorithmFGD = "fgd"
)

// DefaultSchedulerAlgorithm is the algorithm of a cluster whose operator
// has chosen none.
const DefaultSchedulerAlgorithm = SchedulerAlgorithmFGD

// SchedulerAlgorithms lists the valid algorithms.
var SchedulerAlgorithms = []string{SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread, SchedulerAlgorithmFGD}

// SchedulerConfigRequestType is the Raft message that sets the scheduler
// configuration. It is numbered apart from the message types in rpc.go so
// that types added there in the meantime do not collide with it; never
// renumber.
const SchedulerConfigRequestType MessageType = 16

// RPC methods of the operator endpoint.
const (
	RPCOperatorSchedulerGetConfiguration = "Operator.SchedulerGetConfiguration"
	RPCOperatorSchedulerSetConfiguration = "Operator.SchedulerSetConfiguration"
)

// SchedulerConfiguration is the cluster-wide scheduler configuration an
// operator sets (GET/PUT /v1/operator/scheduler/configuration), kept in
// the replicated state. The JSON shape follows Nomad's.
type SchedulerConfiguration struct {
	// SchedulerAlgorithm is "binpack", "spread" or "fgd"; empty means
	// DefaultSchedulerAlgorithm.
	SchedulerAlgorithm string
	// PreemptionConfig says, per job type, whether a job's placements may
	// preempt lower-priority allocations (structs/preempt.go).
	PreemptionConfig PreemptionConfig
	// MemoryOversubscriptionEnabled lets tasks' memory_max take effect
	// (Nomad's switch, off by default): without it a job could set a huge
	// memory_max and run with no memory limit, starving its neighbours.
	MemoryOversubscriptionEnabled bool

	CreateIndex uint64
	ModifyIndex uint64
}

// PreemptionConfig enables priority preemption per scheduler (Nomad's
// shape). Drover enables it for every job type by default: on a GPU
// cluster a high-priority job should not wait behind low-priority work.
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool
	SysBatchSchedulerEnabled bool
	BatchSchedulerEnabled    bool
	ServiceSchedulerEnabled  bool
}

// Enabled reports whether jobs of jobType may preempt.
func (p PreemptionConfig) Enabled(jobType string) bool {
	switch jobType {
	case JobTypeSystem:
		return p.SystemSchedulerEnabled
	case JobTypeSysBatch:
		return p.SysBatchSchedulerEnabled
	case JobTypeBatch:
		return p.BatchSchedulerEnabled
	case JobTypeService:
		return p.ServiceSchedulerEnabled
	}
	return false
}

// DefaultSchedulerConfiguration is the configuration of a cluster whose
// operator has set none.
func DefaultSchedulerConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{
		SchedulerAlgorithm: DefaultSchedulerAlgorithm,
		PreemptionConfig: PreemptionConfig{
			SystemSchedulerEnabled: true, SysBatchSchedulerEnabled: true,
			BatchSchedulerEnabled: true, ServiceSchedulerEnabled: true,
		},
	}
}

// Canonicalize fills the default algorithm.
func (c *SchedulerConfiguration) Canonicalize() {
	if c.SchedulerAlgorithm == "" {
		c.SchedulerAlgorithm = DefaultSchedulerAlgorithm
	}
}

// Algorithm returns the algorithm in effect: SchedulerAlgorithm, or the
// default when it is empty (or c is nil).
func (c *SchedulerConfiguration) Algorithm() string {
	if c == nil || c.SchedulerAlgorithm == "" {
		return DefaultSchedulerAlgorithm
	}
	return c.SchedulerAlgorithm
}

// Validate checks the algorithm; an error names the field and wraps
// ErrInvalid.
func (c *SchedulerConfiguration) Validate() error {
	switch c.SchedulerAlgorithm {
	case "", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread, SchedulerAlgorithmFGD:
		return nil
	}
	return fmt.Errorf("SchedulerAlgorithm %q is not one of %s: %w",
		c.SchedulerAlgorithm, strings.Join(SchedulerAlgorithms, ", "), ErrInvalid)
}

// Copy returns a copy of the configuration.
func (c *SchedulerConfiguration) Copy() *SchedulerConfiguration {
	if c == nil {
		return nil
	}
	cc := *c
	return &cc
}

// ErrCASConflict is the answer of a check-and-set write whose index no
// longer matches the stored object's.
var ErrCASConflict = NewCodedError(CodeConflict, "check-and-set index no longer matches")

// SchedulerSetConfigRequest sets the scheduler configuration. With CAS,
// it applies only if the stored configuration's ModifyIndex is still
// Config.ModifyIndex (0: none is stored yet).
type SchedulerSetConfigRequest struct {
	Config *SchedulerConfiguration
	CAS    bool
	WriteRequest
}

// SchedulerSetConfigurationResponse answers a set: whether it applied
// (false only for a CAS whose index no longer matched) and at which index.
type SchedulerSetConfigurationResponse struct {
	Updated bool
	WriteMeta
}

// SchedulerConfigurationRequest reads the scheduler configuration.
type SchedulerConfigurationRequest struct {
	QueryOptions
}

// SchedulerConfigurationResponse is the scheduler configuration (the
// default one when none is set) and the index it was read at.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *SchedulerConfiguration
	QueryMeta
}
