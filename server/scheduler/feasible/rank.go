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
// GPU utilisation after placing.
type BinPackRank struct {
	ask *ask
}

// Name implements Ranker.
func (*BinPackRank) Name() string { return "binpack" }

// Score implements Ranker.
func (r *BinPackRank) Score(c *Candidate) float64 {
	res := c.Node.NodeResources
	if res == nil {
		return 0
	}
	cpu, mem := r.ask.cpu, r.ask.memMB
	for _, a := range c.Proposed {
		ac, am := a.Comparable()
		cpu += ac
		mem += am
	}
	sum := ratio(float64(cpu), float64(res.Cpu.CpuShares)) + ratio(float64(mem), float64(res.Memory.MemoryMB))
	total, _, busy := gpuUse(c.Node, c.Proposed)
	if r.ask.gpus == 0 || total == 0 {
		return sum / 2
	}
	sum += gpuWeight * ratio(float64(busy+r.ask.gpus), float64(total))
	return sum / (2 + gpuWeight)
}

// GPUReserveRank keeps GPU nodes for GPU work: for an ask without GPUs it
// scores a node minus the share of its GPUs that are free and healthy, so
// CPU-only nodes (and GPU nodes whose GPUs are busy anyway) win.
type GPUReserveRank struct{}

// Name implements Ranker.
func (GPUReserveRank) Name() string { return "gpu-reserve" }

// Score implements Ranker.
func (GPUReserveRank) Score(c *Candidate) float64 {
	total, free, _ := gpuUse(c.Node, c.Proposed)
	if total == 0 {
		return 0
	}
	return -float64(free) / float64(total)
}

// gpuUse counts a node's GPU instances: all, free and healthy, and held by
// the allocations given.
func gpuUse(n *structs.Node, allocs []*structs.Allocation) (total, free, busy int) {
	if n.NodeResources == nil {
		return 0, 0, 0
	}
	held := heldDevices(allocs)
	for _, g := range n.NodeResources.Devices {
		if g.Type != "gpu" {
			continue
		}
		for _, inst := range g.Instances {
			total++
			switch {
			case held[inst.ID]:
				busy++
			case inst.Healthy:
				free++
			}
		}
	}
	return total, free, busy
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
	for _, a := range c.Proposed {
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
