package feasible

import (
	"math"

	"github.com/droverhq/drover/structs"
)

// Ranker scores a node that passed every filter and fit, in [-1, 1],
// higher is better. A Stack averages the scores of its rankers; each
// score is recorded under the ranker's Name in AllocMetric.ScoreMetaData.
type Ranker interface {
	Name() string
	Score(c *Candidate) float64
}

// gpuWeight is how much more GPU utilisation counts than CPU or memory in
// the bin-packing score of a GPU ask: GPUs are the scarce resource, so a
// GPU job goes to the node whose GPUs are already busiest.
const gpuWeight = 2

// BinPackRank prefers the node left fullest by the placement: the mean of
// its CPU, memory and (for GPU asks on GPU nodes, weighted by gpuWeight)
// GPU utilisation after placing, slices counted by their compute. With
// spread set it prefers the emptiest node instead.
type BinPackRank struct {
	ask    *ask
	spread bool
}

// Name implements Ranker.
func (r *BinPackRank) Name() string {
	if r.spread {
		return "spread"
	}
	return "binpack"
}

// Score implements Ranker.
func (r *BinPackRank) Score(c *Candidate) float64 {
	res := c.Node.NodeResources
	if res == nil {
		return 0
	}
	u := c.Usage
	sum := ratio(float64(u.CPU+r.ask.cpu), float64(res.Cpu.CpuShares)) +
		ratio(float64(u.MemoryMB+r.ask.memMB), float64(res.Memory.MemoryMB))
	parts := 2.0
	if total, busy := gpuBusy(c.Node, u); r.ask.gpus > 0 && total > 0 {
		sum += gpuWeight * ratio(busy+r.ask.gpuShare(), float64(total))
		parts += gpuWeight
	}
	if r.spread {
		return 1 - sum/parts
	}
	return sum / parts
}

// GPUReserveRank keeps GPU nodes for GPU work: for an ask without GPUs it
// scores a node minus the share of its GPUs that are free and healthy, so
// CPU-only nodes (and GPU nodes whose GPUs are busy anyway) win.
type GPUReserveRank struct{}

// Name implements Ranker.
func (GPUReserveRank) Name() string { return "gpu-reserve" }

// Score implements Ranker.
func (GPUReserveRank) Score(c *Candidate) float64 {
	total, _ := gpuBusy(c.Node, c.Usage)
	if total == 0 {
		return 0
	}
	return -float64(c.Usage.FreeGPUs) / float64(total)
}

// gpuBusy counts a node's GPU instances, and how many GPUs' worth of them
// the usage holds (a slice counts its compute share).
func gpuBusy(n *structs.Node, u *structs.NodeUsage) (total int, busy float64) {
	if n.NodeResources == nil {
		return 0, 0
	}
	for _, g := range n.NodeResources.Devices {
		if g.Type != "gpu" {
			continue
		}
		total += len(g.Instances)
		for _, inst := range g.Instances {
			if use, ok := u.Devices[inst.ID]; ok {
				busy += float64(structs.WholeGPU-use.FreeCompute()) / structs.WholeGPU
			}
		}
	}
	return total, busy
}

// JobAntiAffinityRank spreads a group's allocations: a node already
// holding k of them (proposed ones included) scores -k/count.
type JobAntiAffinityRank struct {
	namespace, jobID, group string
	desired                 int
}

// NewJobAntiAffinityRank returns the ranker for the group of job.
func NewJobAntiAffinityRank(job *structs.Job, tg *structs.TaskGroup) *JobAntiAffinityRank {
	return &JobAntiAffinityRank{namespace: job.Namespace, jobID: job.ID, group: tg.Name, desired: max(tg.Count, 1)}
}

// Name implements Ranker.
func (*JobAntiAffinityRank) Name() string { return "job-anti-affinity" }

// Score implements Ranker.
func (r *JobAntiAffinityRank) Score(c *Candidate) float64 {
	collisions := 0
	for _, a := range c.JobAllocs {
		if a.Namespace == r.namespace && a.JobID == r.jobID && a.TaskGroup == r.group {
			collisions++
		}
	}
	return -math.Min(1, float64(collisions)/float64(r.desired))
}

// NodeAffinityRank scores the job's, group's and tasks' affinities: the
// weights of those the node matches, over the sum of all weights' sizes.
type NodeAffinityRank struct {
	affinities []*structs.Affinity
	checker    *Checker
	total      float64
}

// NewNodeAffinityRank returns the ranker, or nil when there are no
// affinities.
func NewNodeAffinityRank(affinities []*structs.Affinity, checker *Checker) *NodeAffinityRank {
	if len(affinities) == 0 {
		return nil
	}
	r := &NodeAffinityRank{affinities: affinities, checker: checker}
	for _, a := range affinities {
		r.total += math.Abs(float64(a.Weight))
	}
	return r
}

// Name implements Ranker.
func (*NodeAffinityRank) Name() string { return "node-affinity" }

// Score implements Ranker.
func (r *NodeAffinityRank) Score(c *Candidate) float64 {
	resolve := NodeResolver(c.Node)
	sum := 0.0
	for _, a := range r.affinities {
		if r.checker.Holds(a.LTarget, a.Operand, a.RTarget, resolve) {
			sum += float64(a.Weight)
		}
	}
	return sum / r.total
}

// DeviceAffinityRank scores the device requests' affinities against the
// instances DeviceFit chose: each affinity contributes its weight times
// the share of chosen instances that match it.
type DeviceAffinityRank struct {
	asks    []deviceAsk
	checker *Checker
	total   float64
}

// Name implements Ranker.
func (*DeviceAffinityRank) Name() string { return "device-affinity" }

// Score implements Ranker.
func (r *DeviceAffinityRank) Score(c *Candidate) float64 {
	sum := 0.0
	for i, a := range r.asks {
		if i >= len(c.chosen) || len(c.chosen[i]) == 0 {
			continue
		}
		for _, aff := range a.req.Affinities {
			matched := 0
			for _, ref := range c.chosen[i] {
				if r.checker.Holds(aff.LTarget, aff.Operand, aff.RTarget, DeviceResolver(ref.group, ref.inst)) {
					matched++
				}
			}
			sum += float64(aff.Weight) * float64(matched) / float64(len(c.chosen[i]))
		}
	}
	return sum / r.total
}

func newDeviceAffinityRank(asks []deviceAsk, checker *Checker) *DeviceAffinityRank {
	r := &DeviceAffinityRank{asks: asks, checker: checker}
	for _, a := range asks {
		for _, aff := range a.req.Affinities {
			r.total += math.Abs(float64(aff.Weight))
		}
	}
	if r.total == 0 {
		return nil
	}
	return r
}

func ratio(used, total float64) float64 {
	if total <= 0 {
		return 1
	}
	return math.Min(1, used/total)
}
