package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/droverhq/drover/server/scheduler/frag"
	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

// Result summarizes a simulation. Its JSON form is what `drover sim -json`
// prints.
type Result struct {
	Policy string `json:"policy"`
	// Algorithm is the scheduler algorithm Policy put in effect.
	Algorithm   string  `json:"algorithm"`
	Arrival     float64 `json:"arrival"`
	Seed        uint64  `json:"seed"`
	Nodes       int     `json:"nodes"`
	ClusterGPUs int     `json:"cluster_gpus"`
	// JobSize is how many pods were submitted together, as one batch job
	// (Config.JobSize; 1: one job per pod).
	JobSize int `json:"job_size"`
	// Submitted pods = Placed + Failed.
	Submitted int `json:"submitted"`
	Placed    int `json:"placed"`
	Failed    int `json:"failed"`
	// GPURequested and GPUAllocated sum NumGPU × GPUMilli/1000 over the
	// submitted and the placed pods.
	GPURequested float64 `json:"gpu_requested"`
	GPUAllocated float64 `json:"gpu_allocated"`
	// GPUAllocationRatio is GPUAllocated / ClusterGPUs (0 to 1).
	GPUAllocationRatio float64 `json:"gpu_allocation_ratio"`
	// CPUAllocationRatio is the placed pods' cpu_milli over the nodes'.
	CPUAllocationRatio float64 `json:"cpu_allocation_ratio"`
	// Fragmentation is the cluster's expected fragmented GPU capacity at
	// the end (frag.Node summed over nodes, each node's free capacity
	// taken from its allocations in the state store) under the
	// distribution of the submitted pods' GPU asks, over ClusterGPUs (0 to
	// 1).
	Fragmentation float64 `json:"fragmentation"`
	// PlacementsPerSecond is Placed divided by ProcessSeconds.
	PlacementsPerSecond float64 `json:"placements_per_second"`
	// ProcessSeconds sums the wall time of every Process call (scheduling,
	// plan re-check and state writes; not the job and eval registration).
	ProcessSeconds float64 `json:"process_seconds"`
	// P50Ms, P99Ms and MaxMs are percentiles (nearest rank) of the Process
	// wall times of all submitted pods, in milliseconds.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// PlanRejections counts node parts of plans the re-check refused; a
	// scheduler that works from fresh state causes none.
	PlanRejections int `json:"plan_rejections"`
	// MaxGPUCompute is the most compute (percent) held on any one GPU at
	// the end, whole holders counting 100; OvercommittedNodes counts the
	// nodes whose allocations, recounted from state, do not fit them
	// (structs.NodeUsage.Check: CPU, memory, a GPU held twice, slices
	// past 100% or past its memory). A correct scheduler keeps them at
	// most 100 and 0.
	MaxGPUCompute      int `json:"max_gpu_compute_percent"`
	OvercommittedNodes int `json:"overcommitted_nodes"`
	// DurationSeconds is the wall time of the whole run, setup included.
	DurationSeconds float64 `json:"duration_seconds"`
}

// summarize computes the Result of a finished replay.
func (r *replay) summarize(cfg Config, policy string, arrivals []PodSpec, outcomes []Outcome) (*Result, error) {
	res := &Result{
		Policy:         policy,
		Arrival:        cfg.Arrival,
		Seed:           cfg.Seed,
		Nodes:          len(cfg.Nodes),
		ClusterGPUs:    ClusterGPUs(cfg.Nodes),
		JobSize:        max(cfg.JobSize, 1),
		Submitted:      len(outcomes),
		PlanRejections: r.planner.rejected,
	}
	var clusterCPU, placedCPU int64
	for _, n := range cfg.Nodes {
		clusterCPU += n.CPUMilli
	}
	latencies := make([]time.Duration, 0, len(outcomes))
	var total time.Duration
	for _, o := range outcomes {
		res.GPURequested += o.Pod.GPUShare()
		latencies = append(latencies, o.Latency)
		total += o.Latency
		if o.Placed {
			res.Placed++
			res.GPUAllocated += o.Pod.GPUShare()
			placedCPU += o.Pod.CPUMilli
		}
		if o.Failed {
			res.Failed++
		}
	}
	res.GPUAllocationRatio = ratio(res.GPUAllocated, float64(res.ClusterGPUs))
	res.CPUAllocationRatio = ratio(float64(placedCPU), float64(clusterCPU))
	res.ProcessSeconds = total.Seconds()
	res.PlacementsPerSecond = ratio(float64(res.Placed), total.Seconds())
	slices.Sort(latencies)
	res.P50Ms = ms(percentile(latencies, 50))
	res.P99Ms = ms(percentile(latencies, 99))
	if len(latencies) > 0 {
		res.MaxMs = ms(latencies[len(latencies)-1])
	}
	fragmented, err := r.fragmentation(arrivals)
	if err != nil {
		return nil, err
	}
	res.Fragmentation = ratio(fragmented, float64(res.ClusterGPUs))
	if res.MaxGPUCompute, res.OvercommittedNodes, err = r.overcommit(); err != nil {
		return nil, err
	}
	return res, nil
}

// overcommit recounts every node's allocations from state and returns
// the most compute held on one GPU and the nodes that do not fit.
func (r *replay) overcommit() (maxCompute, nodes int, err error) {
	snap, err := r.store.Snapshot()
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot: %w", err)
	}
	all, err := snap.Nodes(nil)
	if err != nil {
		return 0, 0, fmt.Errorf("read nodes: %w", err)
	}
	for _, n := range all {
		use, err := recount(snap, n)
		if err != nil {
			return 0, 0, err
		}
		if ok, _ := use.Check(n); !ok {
			nodes++
		}
		for _, d := range use.Devices {
			maxCompute = max(maxCompute, d.Whole*structs.WholeGPU+d.Compute)
		}
	}
	return maxCompute, nodes, nil
}

// fragmentation returns the cluster's fragmented GPU capacity in GPUs:
// frag.Node over every node's free capacity, under the GPU asks of pods.
func (r *replay) fragmentation(pods []PodSpec) (float64, error) {
	var tally frag.Tally
	for _, p := range pods {
		tally.Add(p.NumGPU, p.ComputePercent(), p.CPUMilli, p.MemoryMiB)
	}
	workload := tally.Workload()
	if len(workload) == 0 {
		return 0, nil
	}
	snap, err := r.store.Snapshot()
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	nodes, err := snap.Nodes(nil)
	if err != nil {
		return 0, fmt.Errorf("read nodes: %w", err)
	}
	sum := 0.0
	for _, n := range nodes {
		free, err := nodeFree(snap, n)
		if err != nil {
			return 0, err
		}
		sum += frag.Node(free, workload)
	}
	return sum, nil
}

// nodeFree is what n has left, summed from its live allocations with the
// same accounting the scheduler uses (structs.NodeUsage).
func nodeFree(snap *state.StateSnapshot, n *structs.Node) (frag.NodeFree, error) {
	use, err := recount(snap, n)
	if err != nil {
		return frag.NodeFree{}, err
	}
	free := frag.NodeFree{
		CPU:      n.NodeResources.Cpu.CpuShares - use.CPU,
		MemoryMB: n.NodeResources.Memory.MemoryMB - use.MemoryMB,
	}
	for _, g := range n.NodeResources.Devices {
		if g.Type != "gpu" {
			continue
		}
		for _, inst := range g.Instances {
			if inst.Healthy {
				free.GPUs = append(free.GPUs, use.Devices[inst.ID].FreeCompute())
			}
		}
	}
	return free, nil
}

// recount sums n's live allocations in state afresh (not the store's
// usage table), with the accounting the scheduler uses.
func recount(snap *state.StateSnapshot, n *structs.Node) (*structs.NodeUsage, error) {
	allocs, err := snap.AllocsByNode(nil, n.ID)
	if err != nil {
		return nil, fmt.Errorf("read allocs of node %s: %w", n.Name, err)
	}
	use := structs.NewNodeUsage(n)
	for _, a := range allocs {
		if !a.TerminalStatus() {
			use.Add(a, 1)
		}
	}
	use.Refresh(n)
	return use, nil
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
