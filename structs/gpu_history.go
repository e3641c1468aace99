package structs

import "time"

// GPU utilisation history: each client samples its GPUs every interval
// into a bounded ring per GPU (client/gpuhistory) and serves it through
// the servers (GET /v1/client/gpus/history and
// GET /v1/client/allocation/<id>/gpus/history). The servers never store
// it.

// Defaults and limits of the history a client keeps.
const (
	DefaultGPUHistoryInterval = 10 * time.Second
	DefaultGPUHistoryWindow   = time.Hour
	// MaxGPUHistorySamples caps window/interval: the samples kept, and
	// answered, per GPU.
	MaxGPUHistorySamples = 10_000
	// MinGPUHistoryInterval is the shortest sampling interval.
	MinGPUHistoryInterval = 100 * time.Millisecond

	// DefaultGPUIdleWindow and GPUIdleThresholdPercent define an idle
	// allocation: every GPU it holds stayed under the threshold for
	// the whole window.
	DefaultGPUIdleWindow    = 10 * time.Minute
	GPUIdleThresholdPercent = 5.0
)

// GPUSample is one reading of a GPU: its utilisation and memory use at
// Timestamp (Unix nanoseconds).
type GPUSample struct {
	Timestamp       int64
	GPUUtilPercent  float32
	MemoryUsedBytes uint64
}

// GPUHistory is one GPU's samples, oldest first.
type GPUHistory struct {
	ID string
	// Simulated is true for a simulated GPU, whose numbers are synthetic.
	Simulated bool
	// Allocated is set when a live allocation held the GPU at the last
	// sample.
	Allocated bool
	Samples   []GPUSample
}

// GPUHistoryRequest asks a node (NodeID) or the node of an allocation
// (AllocID) for its GPUs' history over the last Window (0 or more than
// the client keeps: all of it).
type GPUHistoryRequest struct {
	AllocID string
	NodeID  string
	Window  time.Duration
}

// GPUHistoryResponse answers it: every GPU of the node, or those the
// allocation holds, in the node's order.
type GPUHistoryResponse struct {
	NodeID  string
	AllocID string `json:",omitempty"`
	// Interval and Window are the client's sampling settings.
	Interval time.Duration
	Window   time.Duration
	GPUs     []*GPUHistory

	// Of an allocation: Idle is set when every GPU it holds stayed
	// under IdleThresholdPercent for IdleWindow while it held them
	// (an allocated GPU doing nothing); IdleGPUs lists the GPUs that
	// did, and IdleSince (Unix nanoseconds) is since when the whole
	// allocation was (0 unless Idle).
	IdleWindow           time.Duration
	IdleThresholdPercent float64
	Idle                 bool
	IdleGPUs             []string
	IdleSince            int64 `json:",omitempty"`
}

// MetaSimulatedGPUUtil is the job or group meta key that sets the
// utilisation (a percentage) the simulated GPUs an allocation holds
// report, instead of simulated.BusyUtilPercent: "0" simulates an
// allocation that leaves its GPUs idle. Real GPUs ignore it.
const MetaSimulatedGPUUtil = "simulated_gpu_util"
