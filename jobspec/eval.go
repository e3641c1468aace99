package jobspec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Evaluation splits every expression in two kinds, as Nomad's jobspec2
// does. An expression whose variables all start with var. or local. (or
// that has none) is evaluated when the file is read, with the functions
// of functions.go. Any other root (attr, node, meta, env, NOMAD_*,
// device, ...) names something only the scheduler or the client knows:
// inside a string such an interpolation is kept as written, "${...}",
// and anywhere else it is an error.

// Bounds on the work one file may ask for. Every for expression charges
// the length of the collection it iterates, and every function result
// and every interpolated string part charges its size, so that nested
// loops, repeated interpolation and growing functions end with an error
// instead of hanging or exhausting memory.
const (
	maxEvalSteps   = 200_000  // for-expression iterations in all
	maxValueBytes  = 4 << 20  // one function result or local, in bytes and elements
	maxTotalBytes  = 64 << 20 // all function results and string parts together
	maxCollection  = 100_000  // elements in one function result
	maxFormatWidth = 10_000   // width or precision in format verbs
)

// parseTimeRoots are the variable roots evaluated when the file is read.
var parseTimeRoots = map[string]bool{"var": true, "local": true}

// runtimeRoot returns the first root of expr that is not evaluated at
// parse time, or "" when every variable is var.* or local.*.
func runtimeRoot(expr hcl.Expression) string {
	for _, tr := range expr.Variables() {
		if root := tr.RootName(); !parseTimeRoots[root] {
			return root
		}
	}
	return ""
}

// eval evaluates expr into a known cty value. Strings that interpolate
// runtime values keep those interpolations as written.
func (d *decoder) eval(expr hcl.Expression) (cty.Value, bool) {
	switch e := expr.(type) {
	case *hclsyntax.TemplateExpr:
		if runtimeRoot(e) == "" {
			return d.evalCtx(e)
		}
		return d.template(e.Parts, e.SrcRange)
	case *hclsyntax.TemplateWrapExpr:
		if runtimeRoot(e) == "" {
			return d.evalCtx(e)
		}
		return d.template([]hclsyntax.Expression{e.Wrapped}, e.SrcRange)
	case *hclsyntax.ParenthesesExpr:
		return d.eval(e.Expression)
	case *hclsyntax.TupleConsExpr:
		items := make([]cty.Value, 0, len(e.Exprs))
		ok := true
		for _, x := range e.Exprs {
			item, itemOK := d.eval(x)
			ok = ok && itemOK
			items = append(items, item)
		}
		if !ok {
			return cty.DynamicVal, false
		}
		return cty.TupleVal(items), true
	case *hclsyntax.ObjectConsExpr:
		return d.object(e)
	}
	if root := runtimeRoot(expr); root != "" {
		d.errorf(expr.Range(), "Runtime value outside a string",
			"%q is known only when the task runs: write it inside a string, \"${%s...}\", where it is kept for the client; only var.* and local.* are evaluated in expressions.", root, root)
		return cty.DynamicVal, false
	}
	return d.evalCtx(expr)
}

// evalCtx evaluates expr with the file's variables, locals and functions.
func (d *decoder) evalCtx(expr hcl.Expression) (cty.Value, bool) {
	if !d.declared(expr) {
		return cty.DynamicVal, false
	}
	v, diags := expr.Value(d.ctx)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return cty.DynamicVal, false
	}
	return v, true
}

// declared reports each var.x and local.x in expr that the file does
// not define, with a message that says how to define it.
func (d *decoder) declared(expr hcl.Expression) bool {
	ok := true
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		obj := d.ctx.Variables[root]
		if len(tr) < 2 || !parseTimeRoots[root] || !obj.Type().IsObjectType() {
			continue
		}
		name := attrName(tr[1])
		if name == "" || obj.Type().HasAttribute(name) {
			continue
		}
		ok = false
		if root == "var" {
			d.errorf(tr.SourceRange(), "Undeclared variable", "var.%s is not declared: add a variable %q { } block.", name, name)
		} else {
			d.errorf(tr.SourceRange(), "Undefined local", "local.%s is not defined in any locals block.", name)
		}
	}
	return ok
}

// template rebuilds a string template that interpolates runtime values:
// literal parts as HCL decoded them (escapes applied), parse-time
// interpolations evaluated, runtime ones as their source text "${...}".
// Template directives (%{ if }, %{ for }) over runtime values are refused.
func (d *decoder) template(parts []hclsyntax.Expression, rng hcl.Range) (cty.Value, bool) {
	var b strings.Builder
	lo := rng.Start.Byte
	for i, p := range parts {
		if lit, isLit := p.(*hclsyntax.LiteralValueExpr); isLit && lit.Val.Type() == cty.String && lit.Val.IsKnown() && !lit.Val.IsNull() {
			b.WriteString(lit.Val.AsString())
			lo = p.Range().End.Byte
			continue
		}
		hi := rng.End.Byte
		if i+1 < len(parts) {
			hi = parts[i+1].Range().Start.Byte
		}
		raw, end, found := d.interpolation(lo, p.Range(), hi)
		if !found {
			d.errorf(p.Range(), "Unsupported template directive",
				"Template directives (%%{ ... }) may use only var.* and local.*; runtime interpolations (${...}) are kept as written for the client.")
			return cty.DynamicVal, false
		}
		lo = end
		if runtimeRoot(p) != "" {
			b.WriteString(raw)
			continue
		}
		s, ok := d.templatePart(p)
		if !ok {
			return cty.DynamicVal, false
		}
		b.WriteString(s)
	}
	return cty.StringVal(b.String()), true
}

// templatePart evaluates one parse-time interpolation to its string.
func (d *decoder) templatePart(p hclsyntax.Expression) (string, bool) {
	v, ok := d.evalCtx(p)
	if !ok {
		return "", false
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil || sv.IsNull() || !sv.IsKnown() {
		d.errorf(p.Range(), "Invalid template interpolation value", "The value cannot be included in a string: it must be a string, number or bool.")
		return "", false
	}
	return sv.AsString(), true
}

func (d *decoder) object(e *hclsyntax.ObjectConsExpr) (cty.Value, bool) {
	out := make(map[string]cty.Value, len(e.Items))
	ok := true
	for _, item := range e.Items {
		key, keyOK := d.objectKey(item.KeyExpr)
		val, valOK := d.eval(item.ValueExpr)
		ok = ok && keyOK && valOK
		if !keyOK {
			continue
		}
		if _, dup := out[key]; dup {
			d.errorf(item.KeyExpr.Range(), "Duplicate object attribute", "The key %q is defined more than once.", key)
			ok = false
			continue
		}
		out[key] = val
	}
	if !ok {
		return cty.DynamicVal, false
	}
	return cty.ObjectVal(out), true
}

// objectKey returns an object key: a bare name is taken literally, any
// other expression must give a string (or a number or bool, printed).
func (d *decoder) objectKey(expr hclsyntax.Expression) (string, bool) {
	inner := expr
	if ke, isKey := expr.(*hclsyntax.ObjectConsKeyExpr); isKey {
		if kw := hcl.ExprAsKeyword(ke.Wrapped); kw != "" && !ke.ForceNonLiteral {
			return kw, true
		}
		inner = ke.Wrapped
	}
	v, ok := d.value(inner)
	if !ok {
		return "", false
	}
	s, isScalar := scalarString(v)
	if !isScalar {
		d.errorf(expr.Range(), "Invalid object key", "An object key must be a string.")
		return "", false
	}
	return s, true
}

// budget is the work done so far for one file, shared by every
// expression, function call and template of it.
type budget struct {
	steps int
	bytes int
}

func (b *budget) chargeSteps(n int) error {
	if b.steps += n; b.steps > maxEvalSteps {
		return fmt.Errorf("for expressions iterate more than %d times in all", maxEvalSteps)
	}
	return nil
}

func (b *budget) chargeBytes(n int) error {
	if b.bytes += n; b.bytes > maxTotalBytes {
		return fmt.Errorf("the file's expressions produce more than %d MiB in all", maxTotalBytes>>20)
	}
	return nil
}

// instrument makes every for expression of body charge the budget for
// the collection it iterates, and every non-literal template part for
// the string it adds, before the work is done.
// Number literals too large to print are refused here, before any
// conversion to a string could try.
func instrument(body hclsyntax.Node, b *budget) hcl.Diagnostics {
	return hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		switch e := n.(type) {
		case *hclsyntax.LiteralValueExpr:
			if err := checkNumbers(e.Val); err != nil {
				return hcl.Diagnostics{diag(e.SrcRange, "Number out of range", "%s.", err)}
			}
		case *hclsyntax.ForExpr:
			e.CollExpr = newCharged(e.CollExpr, b, true)
		case *hclsyntax.TemplateExpr:
			for i, p := range e.Parts {
				if _, lit := p.(*hclsyntax.LiteralValueExpr); !lit {
					e.Parts[i] = newCharged(p, b, false)
				}
			}
		}
		return nil
	})
}

// charged wraps an expression and charges the budget for its value: the
// number of elements of a collection to iterate, or the size of a string
// to interpolate. Over budget, it gives an error and an unknown value, so
// that the loop or template around it does no more work.
//
// The wrapped expression sits inside a ParenthesesExpr, whose walk visits
// its content: hclsyntax.Variables still sees every traversal.
type charged struct {
	*hclsyntax.ParenthesesExpr
	b          *budget
	collection bool
}

func newCharged(inner hclsyntax.Expression, b *budget, collection bool) *charged {
	return &charged{ParenthesesExpr: &hclsyntax.ParenthesesExpr{Expression: inner, SrcRange: inner.Range()}, b: b, collection: collection}
}

func (c *charged) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, diags := c.ParenthesesExpr.Value(ctx)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() {
		return v, diags
	}
	if !c.collection {
		if err := checkNumbers(v); err != nil {
			return cty.DynamicVal, append(diags, diag(c.Range(), "Number out of range", "%s.", err))
		}
	}
	var err error
	switch ty := v.Type(); {
	case c.collection && (ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType()):
		err = c.b.chargeSteps(v.LengthInt())
	case ty == cty.String:
		err = c.b.chargeBytes(len(v.AsString()))
	}
	if err != nil {
		return cty.DynamicVal, append(diags, diag(c.Range(), "Expression too costly", "%s.", err))
	}
	return v, diags
}

var _ hclsyntax.Expression = (*charged)(nil)

// maxNumberExp bounds the binary exponent of a number that may be
// printed or passed to a function: printing 1e999999999 in full takes a
// billion digits.
const maxNumberExp = 4096

// checkNumbers refuses numbers in v too large or too small to print.
func checkNumbers(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	v, _ = v.Unmark()
	ty := v.Type()
	switch {
	case ty == cty.Number:
		f := v.AsBigFloat()
		if f.IsInf() {
			return nil
		}
		if exp := f.MantExp(nil); exp > maxNumberExp || exp < -maxNumberExp {
			return fmt.Errorf("the number is too large or too small (binary exponent %d, at most %d)", exp, maxNumberExp)
		}
	case ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); checkNumbers(e) != nil {
				return checkNumbers(e)
			}
		}
	}
	return nil
}
