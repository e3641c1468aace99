package jobspec

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/droverhq/drover/structs"
)

// Typed readers for one attribute. Each records a diagnostic at the
// attribute's value and returns ok=false when the value has the wrong
// type or is out of range.

func (d *decoder) str(a *hcl.Attribute) (string, bool) {
	v, ok := d.value(a.Expr)
	if !ok {
		return "", false
	}
	s, isScalar := scalarString(v)
	if !isScalar {
		d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for attribute %q: a string is required.", a.Name)
		return "", false
	}
	return s, true
}

// integer reads a whole number between lo and hi.
func (d *decoder) integer(a *hcl.Attribute, lo, hi int64) (int64, bool) {
	v, ok := d.value(a.Expr)
	if !ok {
		return 0, false
	}
	return d.intValue(a, v, lo, hi)
}

// intValue checks that v, the value of a, is a whole number between lo
// and hi (a string holding one will do).
func (d *decoder) intValue(a *hcl.Attribute, v any, lo, hi int64) (int64, bool) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case string:
		parsed, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for attribute %q: a whole number is required, not %q.", a.Name, x)
			return 0, false
		}
		n = parsed
	default:
		d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for attribute %q: a whole number is required.", a.Name)
		return 0, false
	}
	if n < lo || n > hi {
		d.errorf(a.Expr.Range(), "Invalid value", "%s = %d is out of range: want %s.", a.Name, n, rangeText(lo, hi))
		return 0, false
	}
	return n, true
}

func rangeText(lo, hi int64) string {
	if hi >= math.MaxInt32 {
		return "at least " + strconv.FormatInt(lo, 10)
	}
	return "between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10)
}

func (d *decoder) boolean(a *hcl.Attribute) (bool, bool) {
	v, ok := d.value(a.Expr)
	if !ok {
		return false, false
	}
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		if b, err := strconv.ParseBool(x); err == nil {
			return b, true
		}
	}
	d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for attribute %q: a bool is required.", a.Name)
	return false, false
}

func (d *decoder) stringList(a *hcl.Attribute) ([]string, bool) {
	v, ok := d.value(a.Expr)
	if !ok {
		return nil, false
	}
	list, isList := v.([]any)
	if !isList {
		d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for attribute %q: a list of strings is required.", a.Name)
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		s, isScalar := scalarString(item)
		if !isScalar {
			d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for attribute %q: a list of strings is required.", a.Name)
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// duration reads a Go duration string such as "30s" or "5m".
func (d *decoder) duration(a *hcl.Attribute) (time.Duration, bool) {
	s, ok := d.str(a)
	if !ok {
		return 0, false
	}
	dur, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		d.errorf(a.Expr.Range(), "Invalid duration", "%s = %q is not a duration (want a number with a unit: \"30s\", \"5m\", \"1h30m\").", a.Name, s)
		return 0, false
	}
	if dur < 0 {
		d.errorf(a.Expr.Range(), "Invalid duration", "%s = %q must not be negative.", a.Name, s)
		return 0, false
	}
	return dur, true
}

// sizeMB reads a memory size: a bare number is MiB, a string may carry a
// unit ("40 GiB", "512 MB"). Sizes that are not whole MiB round up.
func (d *decoder) sizeMB(a *hcl.Attribute) (uint64, bool) {
	v, ok := d.value(a.Expr)
	if !ok {
		return 0, false
	}
	var mb float64
	switch x := v.(type) {
	case int:
		mb = float64(x)
	case float64:
		mb = x
	case string:
		q, valid := structs.ParseQuantity(x)
		switch {
		case !valid || (q.Dim != structs.DimBytes && q.Dim != structs.DimNone):
			d.errorf(a.Expr.Range(), "Invalid size", "%s = %q is not a size (want MB as a number, or a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB).", a.Name, x)
			return 0, false
		case q.Dim == structs.DimNone:
			mb = q.Value
		default:
			mb = q.Value / (1 << 20)
		}
	default:
		d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for attribute %q: a number of MB or a size string is required.", a.Name)
		return 0, false
	}
	if mb < 0 || mb > math.MaxInt32 {
		d.errorf(a.Expr.Range(), "Invalid size", "%s is out of range: want between 0 and %d MB.", a.Name, math.MaxInt32)
		return 0, false
	}
	return uint64(math.Ceil(mb)), true
}

// stringMap reads a map of strings given either as an attribute
// (meta = { k = "v" }) or as a block of attributes (meta { k = "v" }).
func (d *decoder) stringMapAttr(a *hcl.Attribute) (map[string]string, bool) {
	v, ok := d.value(a.Expr)
	if !ok {
		return nil, false
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for attribute %q: a map of strings is required.", a.Name)
		return nil, false
	}
	out := make(map[string]string, len(m))
	for k, item := range m {
		s, isScalar := scalarString(item)
		if !isScalar {
			d.errorf(a.Expr.Range(), "Incorrect attribute value type", "Inappropriate value for %s.%s: a string is required.", a.Name, k)
			return nil, false
		}
		out[k] = s
	}
	return out, true
}

func (d *decoder) stringMapBlock(b *hcl.Block) map[string]string {
	attrs, diags := b.Body.JustAttributes()
	d.diags = append(d.diags, diags...)
	out := make(map[string]string, len(attrs))
	for _, a := range sortedAttrs(attrs) {
		if s, ok := d.str(a); ok {
			out[a.Name] = s
		}
	}
	return out
}

// stringMap merges the attribute and block forms of name found in c. Both
// forms, or the block twice, is an error.
func (d *decoder) stringMap(c *hcl.BodyContent, name string) map[string]string {
	blocks := c.Blocks.OfType(name)
	a := c.Attributes[name]
	if len(blocks) > 1 || (a != nil && len(blocks) > 0) {
		d.errorf(blocks[len(blocks)-1].DefRange, "Duplicate "+name+" block", "Only one %s block (or %s attribute) is allowed here.", name, name)
	}
	switch {
	case a != nil:
		m, _ := d.stringMapAttr(a)
		return m
	case len(blocks) > 0:
		return d.stringMapBlock(blocks[0])
	}
	return nil
}

// configMap reads a driver config body: attributes become values, blocks
// become lists of maps under their type (labels nest one map each).
func (d *decoder) configMap(body hcl.Body) map[string]any {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		d.errorf(body.MissingItemRange(), "Invalid config", "The config body is not native HCL syntax.")
		return nil
	}
	out := make(map[string]any, len(sb.Attributes)+len(sb.Blocks))
	for name, a := range sb.Attributes {
		if v, ok := d.value(a.Expr); ok {
			out[name] = v
		}
	}
	for _, blk := range sb.Blocks {
		if _, isAttr := sb.Attributes[blk.Type]; isAttr {
			d.errorf(blk.TypeRange, "Duplicate config key", "%q is defined both as an argument and as a block.", blk.Type)
			continue
		}
		var item any = d.configMap(blk.Body)
		for i := len(blk.Labels) - 1; i >= 0; i-- {
			item = map[string]any{blk.Labels[i]: item}
		}
		list, _ := out[blk.Type].([]any)
		out[blk.Type] = append(list, item)
	}
	return out
}

// sortedAttrs returns attributes in source order, so that diagnostics and
// decoding order do not depend on map iteration.
func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Range.Start.Byte < out[j].Range.Start.Byte })
	return out
}
