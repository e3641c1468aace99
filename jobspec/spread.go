package jobspec

import (
	"encoding/json"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

var (
	spreadSchema = &schema{
		attrs:  []string{"attribute", "weight"},
		blocks: []hcl.BlockHeaderSchema{block("target", "value")},
	}
	spreadTargetSchema = &schema{attrs: []string{"percent"}}
)

// spreads decodes the spread blocks in c (a job's or a group's). Two
// blocks over one attribute are refused at the second.
func (d *decoder) spreads(c *hcl.BodyContent) []*structs.Spread {
	var out []*structs.Spread
	seen := map[string]*hcl.Block{}
	for _, b := range c.Blocks.OfType("spread") {
		s := d.spread(b)
		if s == nil {
			continue
		}
		if first, dup := seen[s.Attribute]; dup {
			d.errorf(b.DefRange, "Duplicate spread", "A spread over %q is already defined at line %d.", s.Attribute, first.DefRange.Start.Line)
			continue
		}
		seen[s.Attribute] = b
		out = append(out, s)
	}
	return out
}

// spread decodes one spread block: attribute is required, weight
// defaults to 50, each target "<value>" { percent = N } gives a value's
// share. It returns nil when the block is invalid (the problem is
// recorded).
func (d *decoder) spread(b *hcl.Block) *structs.Spread {
	before := len(d.diags)
	c := d.content(b.Body, spreadSchema)
	s := &structs.Spread{Weight: structs.SpreadDefaultWeight}
	if a := c.Attributes["attribute"]; a != nil {
		s.Attribute, _ = d.str(a)
	} else {
		d.errorf(b.DefRange, "Missing required argument", "The argument \"attribute\" is required in a spread block, but no definition was found.")
	}
	if a := c.Attributes["weight"]; a != nil {
		if n, ok := d.integer(a, structs.SpreadMinWeight, structs.SpreadMaxWeight); ok {
			s.Weight = int8(n)
		}
	}
	s.SpreadTarget = d.spreadTargets(c.Blocks.OfType("target"))
	if len(d.diags) > before {
		return nil
	}
	if err := s.Validate(); err != nil {
		d.errorf(b.DefRange, "Invalid spread", "%s.", err)
		return nil
	}
	return s
}

// spreadTargets decodes target blocks, reporting a repeated value at its
// label and the target that takes the percentages past 100 at its
// percent.
func (d *decoder) spreadTargets(blocks hcl.Blocks) []*structs.SpreadTarget {
	var out []*structs.SpreadTarget
	seen := map[string]*hcl.Block{}
	sum := 0
	for _, b := range blocks {
		value := b.Labels[0]
		if value == "" {
			d.errorf(b.LabelRanges[0], "Invalid target", "A target needs the attribute value it stands for, as in target \"dc1\" { ... }.")
			continue
		}
		if first, dup := seen[value]; dup {
			d.errorf(b.LabelRanges[0], "Duplicate target", "A target %q is already defined at line %d.", value, first.DefRange.Start.Line)
			continue
		}
		seen[value] = b
		t := &structs.SpreadTarget{Value: value}
		c := d.content(b.Body, spreadTargetSchema)
		if a := c.Attributes["percent"]; a != nil {
			n, ok := d.integer(a, 0, 100)
			if !ok {
				continue
			}
			t.Percent = uint8(n)
			if sum += int(n); sum > 100 {
				d.errorf(a.Expr.Range(), "Invalid value", "The targets' percents add up to %d here; they must not exceed 100.", sum)
			}
		}
		out = append(out, t)
	}
	return out
}

// shadowSpread sees whether a JSON spread gave a weight.
type shadowSpread struct{ Weight *json.RawMessage }

// defaultSpreadWeights gives the spreads of a JSON job that name no
// weight the HCL default.
func defaultSpreadWeights(spreads []*structs.Spread, shadow []shadowSpread) {
	for i, s := range spreads {
		if s != nil && at(shadow, i).Weight == nil {
			s.Weight = structs.SpreadDefaultWeight
		}
	}
}
