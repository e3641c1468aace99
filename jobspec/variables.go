package jobspec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Input variables, as in Nomad: declared by variable "name" { type,
// default, description, sensitive, validation { condition, error_message } }
// blocks or the variables { name = default } shorthand, and set, each
// later source winning, from defaults, NOMAD_VAR_<name> then
// DROVER_VAR_<name> in the environment, -var-file files in order, and
// -var flags in order. A sensitive variable's value never appears in an
// error.

// maxVariables bounds the variables and the locals of one file.
const maxVariables = 1000

var (
	variableSchema = &schema{
		attrs:  []string{"type", "default", "description", "sensitive"},
		blocks: []hcl.BlockHeaderSchema{block("validation")},
	}
	validationSchema = &schema{attrs: []string{"condition", "error_message"}}
)

// variable is one declared input variable and the value it ends with.
type variable struct {
	name      string
	decl      hcl.Range
	typ       cty.Type
	sensitive bool
	rules     []rule
	value     cty.Value // cty.NilVal: no value from any source
	invalid   bool      // a source gave a value that was refused
	source    string    // where value came from, for messages
}

type rule struct {
	condition hcl.Expression
	message   string
}

// declareVariables reads the variable and variables blocks of the root.
func (d *decoder) declareVariables(c *hcl.BodyContent) map[string]*variable {
	vars := map[string]*variable{}
	add := func(v *variable) {
		if first, dup := vars[v.name]; dup {
			d.errorf(v.decl, "Duplicate variable", "A variable named %q is already declared at line %d.", v.name, first.decl.Start.Line)
			return
		}
		if len(vars) >= maxVariables {
			d.errorf(v.decl, "Too many variables", "A job file declares at most %d variables.", maxVariables)
			return
		}
		vars[v.name] = v
	}
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "variable":
			if !hclsyntax.ValidIdentifier(blk.Labels[0]) {
				d.errorf(blk.LabelRanges[0], "Invalid variable name", "%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", blk.Labels[0])
				continue
			}
			add(d.variable(blk))
		case "variables":
			attrs, diags := blk.Body.JustAttributes()
			d.diags = append(d.diags, diags...)
			for _, a := range sortedAttrs(attrs) {
				v := &variable{name: a.Name, decl: a.NameRange, typ: cty.DynamicPseudoType, source: "its default"}
				v.value, _ = d.constant(a.Expr)
				add(v)
			}
		}
	}
	return vars
}

// variable decodes one variable block.
func (d *decoder) variable(b *hcl.Block) *variable {
	v := &variable{name: b.Labels[0], decl: b.DefRange, typ: cty.DynamicPseudoType}
	c := d.content(b.Body, variableSchema)
	if a := c.Attributes["type"]; a != nil {
		ty, diags := typeexpr.TypeConstraint(a.Expr)
		d.diags = append(d.diags, diags...)
		if !diags.HasErrors() {
			v.typ = ty
		}
	}
	if a := c.Attributes["sensitive"]; a != nil {
		v.sensitive, _ = d.boolean(a)
	}
	if a := c.Attributes["description"]; a != nil {
		_, _ = d.str(a)
	}
	if a := c.Attributes["default"]; a != nil {
		if def, ok := d.constant(a.Expr); ok {
			v.value, v.source = d.convertVar(v, def, "its default", a.Expr.Range()), "its default"
		}
	}
	for _, blk := range c.Blocks.OfType("validation") {
		vc := d.content(blk.Body, validationSchema)
		cond, msg := vc.Attributes["condition"], vc.Attributes["error_message"]
		if cond == nil || msg == nil {
			d.errorf(blk.DefRange, "Incomplete validation", "A validation block needs both condition and error_message.")
			continue
		}
		text, ok := d.str(msg)
		if !ok {
			continue
		}
		for _, tr := range cond.Expr.Variables() {
			if tr.RootName() != "var" || len(tr) < 2 || attrName(tr[1]) != v.name {
				d.errorf(tr.SourceRange(), "Invalid validation condition", "The condition of var.%s may refer only to var.%s.", v.name, v.name)
				ok = false
			}
		}
		if ok {
			v.rules = append(v.rules, rule{condition: cond.Expr, message: text})
		}
	}
	return v
}

func attrName(t hcl.Traverser) string {
	switch s := t.(type) {
	case hcl.TraverseAttr:
		return s.Name
	case hcl.TraverseIndex:
		if s.Key.Type() == cty.String {
			return s.Key.AsString()
		}
	}
	return ""
}

// constant evaluates expr with no variables and no functions.
func (d *decoder) constant(expr hcl.Expression) (cty.Value, bool) {
	v, diags := expr.Value(nil)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	return v, true
}

// convertVar converts val to v's type; an error names the variable and
// the source and is placed at rng. It returns cty.NilVal on error.
func (d *decoder) convertVar(v *variable, val cty.Value, source string, rng hcl.Range) cty.Value {
	err := checkNumbers(val)
	out := cty.NilVal
	if err == nil {
		out, err = convert.Convert(val, v.typ)
	}
	if err != nil {
		detail := err.Error()
		if v.sensitive {
			detail = "the value (sensitive, not shown) does not convert"
		}
		v.invalid = true
		d.errorf(rng, "Invalid value for variable", "var.%s (from %s) must be %s: %s.", v.name, source, v.typ.FriendlyName(), detail)
		return cty.NilVal
	}
	return out
}

// varValues returns the object of every variable's value, after the
// sources of opts and the validation rules. filename is the job file's.
func (d *decoder) varValues(filename string, vars map[string]*variable, opts Options) cty.Value {
	d.envValues(vars, opts.Env)
	for _, f := range opts.VarFiles {
		d.varFile(vars, f)
	}
	for _, kv := range opts.Vars {
		name, raw, found := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		v := vars[name]
		switch {
		case !found || name == "":
			d.diags = append(d.diags, fileDiag(filename, "Invalid -var option", fmt.Sprintf("%q: want name=value.", kv)))
		case v == nil:
			d.diags = append(d.diags, fileDiag(filename, "Undeclared variable", fmt.Sprintf("-var %s: the job file declares no variable %q.", name, name)))
		default:
			d.setFromString(v, raw, "-var "+name, v.decl)
		}
	}
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]cty.Value, len(vars))
	for _, name := range names {
		v := vars[name]
		if v.value == cty.NilVal || v.invalid {
			if v.invalid {
				out[name] = cty.DynamicVal
				continue
			}
			d.errorf(v.decl, "Missing value for variable", "var.%s has no default and no value: set it with -var %s=..., a -var-file, or NOMAD_VAR_%s.", name, name, name)
			out[name] = cty.DynamicVal
			continue
		}
		d.checkRules(v)
		out[name] = v.value
	}
	return cty.ObjectVal(out)
}

// fileDiag is a problem with no position in the job file.
func fileDiag(filename, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &hcl.Range{Filename: filename}}
}

// envValues sets declared variables from NOMAD_VAR_<name>, then
// DROVER_VAR_<name>; undeclared names in the environment are ignored.
func (d *decoder) envValues(vars map[string]*variable, env []string) {
	for _, prefix := range []string{"NOMAD_VAR_", "DROVER_VAR_"} {
		for _, kv := range env {
			name, raw, found := strings.Cut(kv, "=")
			if !found || !strings.HasPrefix(name, prefix) {
				continue
			}
			if v := vars[strings.TrimPrefix(name, prefix)]; v != nil {
				d.setFromString(v, raw, "environment variable "+name, v.decl)
			}
		}
	}
}

// setFromString sets v from a value given as text (-var, environment): a
// string variable (or one of any type) takes the text as it is; any other
// type parses it as an HCL expression, such as ["a", "b"] or 3.
func (d *decoder) setFromString(v *variable, raw, source string, rng hcl.Range) {
	val := cty.StringVal(raw)
	if v.typ != cty.String && v.typ != cty.DynamicPseudoType {
		expr, diags := hclsyntax.ParseExpression([]byte(raw), source, hcl.InitialPos)
		if !diags.HasErrors() {
			val, diags = expr.Value(nil)
		}
		if diags.HasErrors() {
			d.errorf(rng, "Invalid value for variable", "var.%s (from %s) is not a valid %s expression.", v.name, source, v.typ.FriendlyName())
			v.invalid = true
			return
		}
	}
	if out := d.convertVar(v, val, source, rng); out != cty.NilVal {
		v.value, v.source = out, source
	}
}

// checkRules runs v's validation rules on its value.
func (d *decoder) checkRules(v *variable) {
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{v.name: v.value})},
		Functions: d.ctx.Functions,
	}
	for _, r := range v.rules {
		res, diags := r.condition.Value(ctx)
		if diags.HasErrors() {
			d.diags = append(d.diags, diags...)
			continue
		}
		if res, err := convert.Convert(res, cty.Bool); err != nil || !res.IsKnown() || res.IsNull() {
			d.errorf(r.condition.Range(), "Invalid validation condition", "The condition of var.%s must give true or false.", v.name)
			continue
		} else if res.False() {
			d.errorf(r.condition.Range(), "Invalid value for variable", "var.%s (from %s): %s", v.name, v.source, r.message)
		}
	}
}
