package jobspec

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// checkpointSchema is a group's checkpoint block (Drover's;
// structs/checkpoint.go).
var checkpointSchema = &schema{attrs: []string{"path", "keep"}}

// checkpoint decodes the group's checkpoint block in c, or returns nil.
// Each problem is reported at the attribute that has it.
func (d *decoder) checkpoint(c *hcl.BodyContent) *structs.CheckpointConfig {
	b := d.single(c, "checkpoint")
	if b == nil {
		return nil
	}
	cp := &structs.CheckpointConfig{}
	bc := d.content(b.Body, checkpointSchema)
	for _, a := range sortedAttrs(bc.Attributes) {
		switch a.Name {
		case "path":
			v, ok := d.str(a)
			if !ok {
				continue
			}
			if err := (&structs.CheckpointConfig{Path: v}).Validate(); err != nil {
				d.errorf(a.Expr.Range(), "Invalid checkpoint path", "%s.", err)
				continue
			}
			cp.Path = v
		case "keep":
			if n, ok := d.integer(a, 0, structs.MaxCheckpointKeep); ok {
				cp.Keep = int(n)
			}
		}
	}
	return cp
}
