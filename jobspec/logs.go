package jobspec

import (
	"math"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// logs decodes a task's logs block: how many files of what size (in MB)
// each of its output streams keeps. What the block leaves out is the
// default (structs.DefaultLogConfig); both must be at least 1.
func (d *decoder) logs(b *hcl.Block) *structs.LogConfig {
	lc := structs.DefaultLogConfig()
	c := d.content(b.Body, logsSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "max_files":
			if n, ok := d.integer(a, 1, math.MaxInt32); ok {
				lc.MaxFiles = int(n)
			}
		case "max_file_size":
			if n, ok := d.integer(a, 1, math.MaxInt32); ok {
				lc.MaxFileSizeMB = int(n)
			}
		case "disabled":
			lc.Disabled, _ = d.boolean(a)
		case "enabled":
			// Nomad's older spelling, the inverse of disabled.
			if v, ok := d.boolean(a); ok {
				lc.Disabled = !v
			}
		}
	}
	return lc
}
