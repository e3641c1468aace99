package jobspec

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// shorthandOperators may be written as `<operator> = "<value>"` in a
// constraint or affinity instead of operator and value, as in Nomad.
var shorthandOperators = []string{
	structs.ConstraintVersion, structs.ConstraintSemver, structs.ConstraintRegex,
	structs.ConstraintSetContains, structs.ConstraintSetContainsAll, structs.ConstraintSetContainsAny,
}

// defaultAffinityWeight is the weight of an affinity that names none.
const defaultAffinityWeight = 50

// targets is what constraint and affinity blocks share.
type targets struct {
	ltarget, rtarget, operand string
	// opRange is where the operator was given (an operator argument or a
	// shorthand), or nil.
	opRange *hcl.Range
	// disabled is set by distinct_hosts = false: no constraint at all.
	disabled bool
}

// readTargets decodes attribute, operator, value and the shorthands. The
// operator defaults to "=".
func (d *decoder) readTargets(c *hcl.BodyContent) targets {
	var t targets
	var shorthand *hcl.Attribute
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "attribute":
			t.ltarget, _ = d.str(a)
		case "value":
			t.rtarget, _ = d.str(a)
		case "operator":
			t.operand, _ = d.str(a)
			t.opRange = a.Expr.Range().Ptr()
		case "weight":
		default:
			if shorthand != nil {
				d.errorf(a.NameRange, "Conflicting operators", "%q and %q both set the operator; use one.", shorthand.Name, a.Name)
				continue
			}
			shorthand = a
		}
	}
	if shorthand == nil {
		if t.operand == "" {
			t.operand = "="
		}
		return t
	}
	if t.opRange != nil {
		d.errorf(shorthand.NameRange, "Conflicting operators", "%q sets the operator, so operator = %q is not allowed too.", shorthand.Name, t.operand)
	}
	t.opRange = shorthand.Expr.Range().Ptr()
	t.operand = shorthand.Name
	d.applyShorthand(shorthand, c, &t)
	return t
}

func (d *decoder) applyShorthand(a *hcl.Attribute, c *hcl.BodyContent, t *targets) {
	switch a.Name {
	case structs.ConstraintDistinctHosts:
		enabled, _ := d.boolean(a)
		t.disabled = !enabled
	case structs.ConstraintDistinctProperty:
		if c.Attributes["attribute"] != nil {
			d.errorf(a.NameRange, "Conflicting arguments", "distinct_property names the attribute, so attribute is not allowed too.")
		}
		t.ltarget, _ = d.str(a)
	default:
		if c.Attributes["value"] != nil {
			d.errorf(a.NameRange, "Conflicting arguments", "%s = ... gives the value, so value is not allowed too.", a.Name)
		}
		t.rtarget, _ = d.str(a)
	}
}

// problemRange is where a validation problem is reported: at the
// operator when there is an attribute (the operator or its value is
// wrong), else at the block.
func (t *targets) problemRange(b *hcl.Block) hcl.Range {
	if t.ltarget != "" && t.opRange != nil {
		return *t.opRange
	}
	return b.DefRange
}

// constraint decodes a constraint block; nil when distinct_hosts = false
// or the block is invalid (the problem is recorded).
func (d *decoder) constraint(b *hcl.Block) *structs.Constraint {
	c := d.content(b.Body, constraintSchema)
	t := d.readTargets(c)
	if t.disabled {
		return nil
	}
	con := &structs.Constraint{LTarget: t.ltarget, RTarget: t.rtarget, Operand: t.operand}
	if err := con.Validate(); err != nil {
		d.errorf(t.problemRange(b), "Invalid constraint", "%s.", err)
		return nil
	}
	return con
}

// affinity decodes an affinity block; weight defaults to 50.
func (d *decoder) affinity(b *hcl.Block) *structs.Affinity {
	c := d.content(b.Body, affinitySchema)
	t := d.readTargets(c)
	aff := &structs.Affinity{LTarget: t.ltarget, RTarget: t.rtarget, Operand: t.operand, Weight: defaultAffinityWeight}
	if a := c.Attributes["weight"]; a != nil {
		n, ok := d.integer(a, -100, 100)
		if !ok {
			return nil
		}
		if n == 0 {
			d.errorf(a.Expr.Range(), "Invalid value", "weight = 0 has no effect: want -100 to -1 (avoid) or 1 to 100 (prefer).")
			return nil
		}
		aff.Weight = int8(n)
	}
	if err := aff.Validate(); err != nil {
		d.errorf(t.problemRange(b), "Invalid affinity", "%s.", err)
		return nil
	}
	return aff
}
