package jobspec

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// The periodic, parameterized and dispatch_payload blocks (Nomad's;
// structs/periodic.go).
var (
	periodicSchema = &schema{
		attrs: []string{"cron", "crons", "prohibit_overlap", "time_zone", "enabled"},
	}
	parameterizedSchema = &schema{
		attrs: []string{"payload", "meta_required", "meta_optional"},
	}
	dispatchPayloadSchema = &schema{
		attrs: []string{"file"},
	}
	payloadModes = []string{structs.DispatchPayloadOptional, structs.DispatchPayloadRequired, structs.DispatchPayloadForbidden}
)

// periodic decodes the job's periodic block in c, or returns nil. Each
// problem of the block is reported at it.
func (d *decoder) periodic(c *hcl.BodyContent) *structs.PeriodicConfig {
	b := d.single(c, "periodic")
	if b == nil {
		return nil
	}
	p := &structs.PeriodicConfig{Enabled: true}
	before := len(d.diags)
	bc := d.content(b.Body, periodicSchema)
	for _, a := range sortedAttrs(bc.Attributes) {
		switch a.Name {
		case "cron":
			p.Spec, _ = d.str(a)
		case "crons":
			p.Specs, _ = d.stringList(a)
		case "prohibit_overlap":
			p.ProhibitOverlap, _ = d.boolean(a)
		case "time_zone":
			p.TimeZone, _ = d.str(a)
		case "enabled":
			p.Enabled, _ = d.boolean(a)
		}
	}
	p.Canonicalize()
	if len(d.diags) == before {
		d.blockErrors(b, "Invalid periodic block", p.Validate())
	}
	return p
}

// parameterized decodes the job's parameterized block in c, or nil.
func (d *decoder) parameterized(c *hcl.BodyContent) *structs.ParameterizedJobConfig {
	b := d.single(c, "parameterized")
	if b == nil {
		return nil
	}
	p := &structs.ParameterizedJobConfig{}
	before := len(d.diags)
	bc := d.content(b.Body, parameterizedSchema)
	for _, a := range sortedAttrs(bc.Attributes) {
		switch a.Name {
		case "payload":
			p.Payload = d.oneOf(a, payloadModes)
		case "meta_required":
			p.MetaRequired, _ = d.stringList(a)
		case "meta_optional":
			p.MetaOptional, _ = d.stringList(a)
		}
	}
	p.Canonicalize()
	if len(d.diags) == before {
		d.blockErrors(b, "Invalid parameterized block", p.Validate())
	}
	return p
}

// dispatchPayload decodes a task's dispatch_payload block in c, or nil.
func (d *decoder) dispatchPayload(c *hcl.BodyContent) *structs.DispatchPayloadConfig {
	b := d.single(c, "dispatch_payload")
	if b == nil {
		return nil
	}
	p := &structs.DispatchPayloadConfig{}
	bc := d.content(b.Body, dispatchPayloadSchema)
	a := bc.Attributes["file"]
	if a == nil {
		d.errorf(b.DefRange, "Missing required argument", "The argument \"file\" is required in dispatch_payload.")
		return p
	}
	if f, ok := d.str(a); ok {
		p.File = f
		if err := p.Validate(); err != nil {
			d.errorf(a.Expr.Range(), "Invalid dispatch_payload file", "%s.", err)
		}
	}
	return p
}

// blockErrors reports each line of err at b.
func (d *decoder) blockErrors(b *hcl.Block, summary string, err error) {
	if err == nil {
		return
	}
	var lines []string
	flattenJoined(err, "", &lines)
	for _, line := range lines {
		d.errorf(b.DefRange, summary, "%s.", line)
	}
}
