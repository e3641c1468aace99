package jobspec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"

	"github.com/droverhq/drover/structs"
)

// VarFile is the content of one -var-file: HCL "name = value" lines, or
// a JSON object when Name ends in ".json".
type VarFile struct {
	Name string
	Src  []byte
}

// varFile sets variables from one var file. Its values are constants;
// every name must be declared.
func (d *decoder) varFile(vars map[string]*variable, f VarFile) {
	var (
		body  hcl.Body
		diags hcl.Diagnostics
	)
	limits := structs.DefaultLimits()
	if isJSON(f.Name, f.Src) {
		if structs.JSONDepth(f.Src, limits.JSONMaxDepth+1) > limits.JSONMaxDepth {
			d.diags = append(d.diags, fileDiag(f.Name, "Nested too deep", "The var file nests deeper than the limit."))
			return
		}
		var file *hcl.File
		file, diags = hcljson.Parse(f.Src, f.Name)
		if file != nil {
			body = file.Body
		}
	} else {
		if err := CheckHCLDepth(f.Name, f.Src, limits.HCLMaxDepth); err != nil {
			d.diags = append(d.diags, fileDiag(f.Name, "Nested too deep", err.Error()))
			return
		}
		var file *hcl.File
		file, diags = hclsyntax.ParseConfig(f.Src, f.Name, hcl.InitialPos)
		if file != nil {
			body = file.Body
		}
	}
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() || body == nil {
		return
	}
	attrs, diags := body.JustAttributes()
	d.diags = append(d.diags, diags...)
	for _, a := range sortedAttrs(attrs) {
		v := vars[a.Name]
		if v == nil {
			d.errorf(a.NameRange, "Undeclared variable", "The var file sets %q, which the job file does not declare.", a.Name)
			continue
		}
		if val, ok := d.constant(a.Expr); ok {
			source := fmt.Sprintf("%s:%d", f.Name, a.NameRange.Start.Line)
			if out := d.convertVar(v, val, source, a.Expr.Range()); out != cty.NilVal {
				v.value, v.source = out, source
			}
		}
	}
}

// local is one entry of a locals block.
type local struct {
	attr *hcl.Attribute
	deps []string
}

// evalLocals evaluates every locals block entry in dependency order,
// each with the variables and the locals before it. A local that refers
// to itself through others is reported with the cycle.
func (d *decoder) evalLocals(c *hcl.BodyContent) {
	all := map[string]*local{}
	for _, blk := range c.Blocks.OfType("locals") {
		attrs, diags := blk.Body.JustAttributes()
		d.diags = append(d.diags, diags...)
		for _, a := range sortedAttrs(attrs) {
			if first, dup := all[a.Name]; dup {
				d.errorf(a.NameRange, "Duplicate local", "local.%s is already defined at line %d.", a.Name, first.attr.NameRange.Start.Line)
				continue
			}
			if len(all) >= maxVariables {
				d.errorf(a.NameRange, "Too many locals", "A job file defines at most %d locals.", maxVariables)
				break
			}
			all[a.Name] = &local{attr: a, deps: localDeps(a.Expr)}
		}
	}
	values := map[string]cty.Value{}
	for _, name := range localOrder(all) {
		d.ctx.Variables["local"] = cty.ObjectVal(values)
		l := all[name]
		v, ok := d.eval(l.attr.Expr)
		if err := checkNumbers(v); ok && err != nil {
			d.errorf(l.attr.Expr.Range(), "Number out of range", "local.%s: %s.", name, err)
			ok = false
		}
		if ok && valueSize(v, maxValueBytes+1) > maxValueBytes {
			d.errorf(l.attr.Expr.Range(), "Value too large", "local.%s is larger than %d MiB.", name, maxValueBytes>>20)
			ok = false
		}
		if !ok {
			v = cty.DynamicVal
		}
		values[name] = v
	}
	for _, name := range sortedNames(all) {
		if _, done := values[name]; !done {
			a := all[name].attr
			d.errorf(a.NameRange, "Cycle in locals", "local.%s depends on itself through %s.", name, cycleText(all, values, name))
		}
	}
	d.ctx.Variables["local"] = cty.ObjectVal(values)
}

// localDeps returns the names of the locals expr refers to.
func localDeps(expr hcl.Expression) []string {
	var deps []string
	for _, tr := range expr.Variables() {
		if tr.RootName() == "local" && len(tr) > 1 {
			if name := attrName(tr[1]); name != "" {
				deps = append(deps, name)
			}
		}
	}
	return deps
}

// localOrder sorts the locals so that each comes after the locals it
// refers to (Kahn's algorithm, by name for ties). Locals in a cycle, or
// that depend on one, are left out. References to undefined locals do
// not order anything: evaluating them reports the error.
func localOrder(all map[string]*local) []string {
	waiting := map[string]int{}
	users := map[string][]string{}
	for name, l := range all {
		for _, dep := range l.deps {
			if _, known := all[dep]; known {
				waiting[name]++
				users[dep] = append(users[dep], name)
			}
		}
	}
	var ready, order []string
	for _, name := range sortedNames(all) {
		if waiting[name] == 0 {
			ready = append(ready, name)
		}
	}
	for len(ready) > 0 {
		name := ready[0]
		ready = ready[1:]
		order = append(order, name)
		next := users[name]
		sort.Strings(next)
		for _, u := range next {
			if waiting[u]--; waiting[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	return order
}

// cycleText follows unevaluated dependencies from start until a name
// repeats: "local.b, local.a".
func cycleText(all map[string]*local, done map[string]cty.Value, start string) string {
	var path []string
	seen := map[string]bool{start: true}
	for cur := start; ; {
		next := ""
		for _, dep := range all[cur].deps {
			if _, ok := done[dep]; !ok && all[dep] != nil {
				next = dep
				break
			}
		}
		if next == "" || len(path) > len(all) {
			break
		}
		path = append(path, "local."+next)
		if seen[next] {
			break
		}
		seen[next] = true
		cur = next
	}
	return strings.Join(path, ", ")
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
