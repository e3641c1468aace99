package jobspec

import (
	"github.com/droverhq/drover/structs"
	"github.com/hashicorp/hcl/v2"
)

var distributedSchema = &schema{
	attrs: []string{"framework", "procs_per_node"},
}

// distributed decodes a group's distributed block (Drover's rendezvous
// variables for training jobs); an invalid value is reported at its
// attribute.
func (d *decoder) distributed(b *hcl.Block) *structs.DistributedConfig {
	dc := &structs.DistributedConfig{}
	before := len(d.diags)
	c := d.content(b.Body, distributedSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "framework":
			if v, ok := d.str(a); ok {
				dc.Framework = v
				probe := structs.DistributedConfig{Framework: v}
				if err := probe.Validate(); err != nil {
					d.errorf(a.Expr.Range(), "Invalid distributed framework", "%s.", err)
				}
			}
		case "procs_per_node":
			if n, ok := d.integer(a, 1, structs.MaxProcsPerNode); ok {
				dc.ProcsPerNode = int(n)
			}
		}
	}
	dc.Canonicalize()
	if err := dc.Validate(); err != nil && len(d.diags) == before {
		d.errorf(b.DefRange, "Invalid distributed block", "%s.", err)
	}
	return dc
}
