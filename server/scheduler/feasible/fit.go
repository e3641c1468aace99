package feasible

import (
	"github.com/droverhq/drover/structs"
)

// Fit says whether one more allocation of the group fits on a candidate
// node next to the allocations proposed there. A node that does not fit is
// exhausted, with the dimension that ran out recorded in
// AllocMetric.DimensionExhausted.
type Fit interface {
	Fit(c *Candidate) (ok bool, dimension string)
}

// ResourceFit checks CPU and memory next to the allocations proposed on
// the node with structs.AllocsFit, the same function the plan applier
// re-checks with. Device instances are DeviceFit's concern: the candidate
// allocation it checks holds none.
type ResourceFit struct {
	candidate *structs.Allocation
	buf       []*structs.Allocation
}

// newResourceFit returns the fit for one allocation of the ask.
func newResourceFit(a *ask) *ResourceFit {
	return &ResourceFit{candidate: &structs.Allocation{
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
		AllocatedResources: a.resources(nil),
	}}
}

// Fit implements Fit.
func (f *ResourceFit) Fit(c *Candidate) (bool, string) {
	f.buf = append(append(f.buf[:0], c.Proposed...), f.candidate)
	return structs.AllocsFit(c.Node, f.buf)
}
