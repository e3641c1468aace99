package jobspec

import (
	"math"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// updateSchema is the update block, job or group level.
var updateSchema = &schema{
	attrs: []string{
		"max_parallel", "stagger", "health_check", "min_healthy_time",
		"healthy_deadline", "progress_deadline", "auto_revert",
		"canary", "auto_promote",
	},
}

// update decodes an update block over base (the job's strategy for a
// group's block, Nomad's default for the job's): what the block leaves
// out is kept from base. The result is canonicalized and checked,
// problems reported at the block.
func (d *decoder) update(b *hcl.Block, base *structs.UpdateStrategy) *structs.UpdateStrategy {
	u := base.Copy()
	before := len(d.diags)
	c := d.content(b.Body, updateSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "max_parallel":
			if n, ok := d.integer(a, 0, math.MaxInt32); ok {
				u.MaxParallel = int(n)
			}
		case "health_check":
			if v := d.oneOf(a, structs.UpdateHealthChecks); v != "" {
				u.HealthCheck = v
			}
		case "auto_revert":
			if v, ok := d.boolean(a); ok {
				u.AutoRevert = v
			}
		case "canary":
			if n, ok := d.integer(a, 0, math.MaxInt32); ok {
				u.Canary = int(n)
			}
		case "auto_promote":
			if v, ok := d.boolean(a); ok {
				u.AutoPromote = v
			}
		default:
			d.updateDuration(u, a)
		}
	}
	u.Canonicalize()
	if len(d.diags) == before {
		if err := u.Validate(); err != nil {
			var lines []string
			flattenJoined(err, "", &lines)
			for _, line := range lines {
				d.errorf(b.DefRange, "Invalid update block", "%s.", line)
			}
		}
	}
	return u
}

// updateDuration sets the duration field of u that a names.
func (d *decoder) updateDuration(u *structs.UpdateStrategy, a *hcl.Attribute) {
	fields := map[string]*time.Duration{
		"stagger":           &u.Stagger,
		"min_healthy_time":  &u.MinHealthyTime,
		"healthy_deadline":  &u.HealthyDeadline,
		"progress_deadline": &u.ProgressDeadline,
	}
	if f := fields[a.Name]; f != nil {
		if v, ok := d.duration(a); ok {
			*f = v
		}
	}
}

// jobUpdate decodes the job-level update block in c, or returns nil when
// there is none (Job.Canonicalize gives a service job the default).
func (d *decoder) jobUpdate(c *hcl.BodyContent) *structs.UpdateStrategy {
	b := d.single(c, "update")
	if b == nil {
		return nil
	}
	return d.update(b, structs.DefaultUpdateStrategy())
}

// groupUpdate returns a group's strategy: its own block over the job's
// (or the default), else nil, which Job.Canonicalize fills with a copy of
// the job's.
func (d *decoder) groupUpdate(c *hcl.BodyContent, jobUpdate *structs.UpdateStrategy) *structs.UpdateStrategy {
	b := d.single(c, "update")
	if b == nil {
		return nil
	}
	base := jobUpdate
	if base == nil {
		base = structs.DefaultUpdateStrategy()
	}
	return d.update(b, base)
}
