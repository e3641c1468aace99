package feasible

import (
	"math"

	"github.com/droverhq/drover/server/scheduler/frag"
	"github.com/droverhq/drover/structs"
)

// fragWeight is the fragmentation stage's weight in a node's score: it
// decides between nodes, bin-packing and the other rankers break ties.
const fragWeight = 4

// fragScale is the change in expected fragmentation (in GPUs) that
// scores -1: one node's worth of GPUs.
const fragScale = 8.0

// FragRank is the fragmentation-aware stage ("Beware of Fragmentation",
// USENIX ATC '23): it prefers the node, with the instances DeviceFit
// chose there, whose expected fragmentation under the cluster's GPU
// workload grows least (or shrinks most) by the placement. The score is
// minus that growth, in GPUs, over fragScale.
type FragRank struct {
	ask      *ask
	workload frag.Workload
	before   frag.NodeFree // scratch
	after    frag.NodeFree
}

// newFragRank returns the stage for ask; an empty workload is taken to be
// more of the ask itself.
func newFragRank(a *ask, w frag.Workload) *FragRank {
	if len(w) == 0 {
		gpus, compute := a.gpus, structs.WholeGPU
		if a.sliceGPUs > 0 && a.gpus == a.sliceGPUs {
			gpus, compute = 1, a.sliceCompute
		}
		w = frag.Workload{{GPUs: gpus, Compute: compute, CPU: a.cpu, MemoryMB: a.memMB, Weight: 1}}
	}
	return &FragRank{ask: a, workload: w}
}

// Name implements Ranker.
func (*FragRank) Name() string { return "fragmentation" }

// Score implements Ranker.
func (r *FragRank) Score(c *Candidate) float64 {
	res := c.Node.NodeResources
	if res == nil {
		return 0
	}
	r.before.CPU = res.Cpu.CpuShares - c.Usage.CPU
	r.before.MemoryMB = res.Memory.MemoryMB - c.Usage.MemoryMB
	r.after.CPU = r.before.CPU - r.ask.cpu
	r.after.MemoryMB = r.before.MemoryMB - r.ask.memMB
	r.before.GPUs, r.after.GPUs = r.before.GPUs[:0], r.after.GPUs[:0]
	for _, g := range res.Devices {
		if g.Type != "gpu" {
			continue
		}
		for _, inst := range g.Instances {
			if !inst.Healthy {
				continue
			}
			free := c.Usage.Devices[inst.ID].FreeCompute()
			r.before.GPUs = append(r.before.GPUs, free)
			r.after.GPUs = append(r.after.GPUs, free-r.taking(c, inst.ID, free))
		}
	}
	delta := frag.Node(r.after, r.workload) - frag.Node(r.before, r.workload)
	return math.Max(-1, math.Min(1, -delta/fragScale))
}

// taking is how much of the instance's free compute the placement takes
// (a MIG instance chosen for a slice is taken whole).
func (r *FragRank) taking(c *Candidate, id string, free int) int {
	for i, chosen := range c.chosen {
		for _, ref := range chosen {
			if ref.inst.ID != id {
				continue
			}
			if req := r.ask.devices[i].req; isSlice(req) && !heldWhole(ref) {
				return min(max(req.Compute, 1), free)
			}
			return free
		}
	}
	return 0
}
