package jobspec

import (
	"math"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// resourcesMisc decodes memory_max and disk (deprecated in Nomad: kept,
// ignored, warned about by Job.Warnings) and refuses cores and numa,
// saying why.
func (d *decoder) resourcesMisc(c *hcl.BodyContent, r *structs.Resources) {
	if a := c.Attributes["memory_max"]; a != nil {
		if mb, ok := d.sizeMB(a); ok {
			if mb > math.MaxInt32 {
				d.errorf(a.Expr.Range(), "Invalid memory_max", "memory_max of %d MB is too large.", mb)
			} else {
				r.MemoryMaxMB = int(mb)
			}
		}
		if a := c.Attributes["memory"]; a != nil && r.MemoryMaxMB > 0 && r.MemoryMaxMB < r.MemoryMB {
			d.errorf(c.Attributes["memory_max"].Expr.Range(), "Invalid memory_max",
				"memory_max (%d MB) must not be less than memory (%d MB): memory is reserved, memory_max is the limit.", r.MemoryMaxMB, r.MemoryMB)
		}
	}
	if a := c.Attributes["disk"]; a != nil {
		if n, ok := d.integer(a, 0, math.MaxInt32); ok {
			r.DiskMB = int(n)
		}
	}
	if a := c.Attributes["cores"]; a != nil {
		d.errorf(a.NameRange, "Unsupported argument",
			"The argument \"cores\" (exclusive CPU cores) is not supported by Drover yet: the scheduler does not reserve cores. Use cpu (MHz) instead.")
	}
	for _, b := range c.Blocks.OfType("numa") {
		d.errorf(b.TypeRange, "Unsupported block type",
			"Blocks of type \"numa\" (Nomad Enterprise's NUMA-aware core placement) are not supported by Drover; for GPUs on one NUMA node use device { topology = \"numa\" }.")
	}
}
