package jobspec

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

var (
	gangNetworkSchema = &schema{attrs: []string{"level", "mode"}}
	gangNetworkModes  = []string{structs.GangNetworkRequired, structs.GangNetworkPreferred}
)

// gangNetwork decodes a gang's network block (Drover's: keep the gang's
// members within one network domain); level is required, mode defaults
// to required.
func (d *decoder) gangNetwork(b *hcl.Block) *structs.GangNetwork {
	n := &structs.GangNetwork{}
	c := d.content(b.Body, gangNetworkSchema)
	if c.Attributes["level"] == nil {
		d.errorf(b.DefRange, "Missing gang network level", "A gang network block needs level: one of block, rack, spine.")
	}
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "level":
			n.Level = d.oneOf(a, structs.TopologyLevels)
		case "mode":
			n.Mode = d.oneOf(a, gangNetworkModes)
		}
	}
	n.Canonicalize()
	return n
}
