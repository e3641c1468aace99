package feasible

// Fit says whether one more allocation of the group fits on a candidate
// node next to what the node's allocations hold. A node that does not fit
// is exhausted, with the dimension that ran out recorded in
// AllocMetric.DimensionExhausted.
type Fit interface {
	Fit(c *Candidate) (ok bool, dimension string)
}

// ResourceFit checks CPU and memory next to the node's usage (the plan's
// allocations included), by the rules of structs.NodeUsage.Check, which
// the plan applier re-checks with. Device instances are DeviceFit's
// concern.
type ResourceFit struct {
	ask *ask
}

// Fit implements Fit.
func (f *ResourceFit) Fit(c *Candidate) (bool, string) {
	res := c.Node.NodeResources
	switch {
	case res == nil:
		return false, "node has no resources"
	case c.Usage.CPU+f.ask.cpu > res.Cpu.CpuShares:
		return false, "cpu"
	case c.Usage.MemoryMB+f.ask.memMB > res.Memory.MemoryMB:
		return false, "memory"
	case !res.Disk.Fits(c.Usage.DiskMB + f.ask.diskMB):
		return false, "disk"
	}
	return true, ""
}
