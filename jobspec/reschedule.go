package jobspec

import (
	"math"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// reschedule decodes a reschedule block over base (the job's policy for a
// group's block, the job type's default for the job's): what the block
// leaves out is kept from base. The result is canonicalized and checked,
// problems reported at the block.
func (d *decoder) reschedule(b *hcl.Block, base *structs.ReschedulePolicy, jobType string) *structs.ReschedulePolicy {
	p := base.Copy()
	before := len(d.diags)
	c := d.content(b.Body, rescheduleSchema)
	maxDelaySet := false
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "attempts":
			if n, ok := d.integer(a, 0, math.MaxInt32); ok {
				p.Attempts = int(n)
			}
		case "interval":
			if v, ok := d.duration(a); ok {
				p.Interval = v
			}
		case "delay":
			if v, ok := d.duration(a); ok {
				p.Delay = v
			}
		case "max_delay":
			if v, ok := d.duration(a); ok {
				p.MaxDelay, maxDelaySet = v, true
			}
		case "delay_function":
			if v := d.oneOf(a, structs.DelayFunctions); v != "" {
				p.DelayFunction = v
			}
		case "unlimited":
			if v, ok := d.boolean(a); ok {
				p.Unlimited = v
			}
		}
	}
	if !maxDelaySet && p.DelayFunction != structs.DelayFunctionConstant && p.MaxDelay < p.Delay {
		// A growing delay whose cap came from a base policy with a
		// shorter delay: let Canonicalize pick the cap again.
		p.MaxDelay = 0
	}
	p.Canonicalize(jobType)
	if len(d.diags) == before {
		if err := p.Validate(); err != nil {
			var lines []string
			flattenJoined(err, "", &lines)
			for _, line := range lines {
				d.errorf(b.DefRange, "Invalid reschedule block", "%s.", line)
			}
		}
	}
	return p
}

// jobReschedule decodes the job-level reschedule block in c, or returns
// nil when there is none.
func (d *decoder) jobReschedule(c *hcl.BodyContent, jobType string) *structs.ReschedulePolicy {
	b := d.single(c, "reschedule")
	if b == nil {
		return nil
	}
	return d.reschedule(b, structs.DefaultReschedulePolicy(jobType), jobType)
}

// groupReschedule returns a group's policy: its own block over the job's
// policy (or the type's default), else a copy of the job's policy (nil
// when neither sets one: the scheduler uses the default).
func (d *decoder) groupReschedule(c *hcl.BodyContent, jobPolicy *structs.ReschedulePolicy, jobType string) *structs.ReschedulePolicy {
	b := d.single(c, "reschedule")
	if b == nil {
		return jobPolicy.Copy()
	}
	base := jobPolicy
	if base == nil {
		base = structs.DefaultReschedulePolicy(jobType)
	}
	return d.reschedule(b, base, jobType)
}
