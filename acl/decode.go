package acl

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// validRuleName is the shape of a namespace or queue rule's name: a
// namespace or queue name (1 to 128 letters, digits or dashes), possibly
// with * wildcards.
var validRuleName = regexp.MustCompile(`^[a-zA-Z0-9*-]{1,128}$`)

// Values each block accepts.
var (
	coarsePolicies    = []string{PolicyDeny, PolicyRead, PolicyWrite}
	namespacePolicies = []string{PolicyDeny, PolicyRead, PolicyWrite, PolicyScale}
	pluginPolicies    = []string{PolicyDeny, PolicyRead, PolicyList}
	nodePoolCaps      = []string{"deny", "read", "write", "delete"}
	hostVolumeCaps    = []string{"deny", "mount-readonly", "mount-readwrite"}
	variableCaps      = []string{"deny", "list", "read", "write", "destroy"}
	blockTypes        = []string{"agent", "host_volume", "namespace", "node", "node_pool", "operator", "plugin", "queue", "quota"}
	singletonBlocks   = []string{"agent", "node", "operator", "plugin", "quota"}
)

// decoder turns a parsed policy body into a Policy, recording every
// problem it finds.
type decoder struct {
	filename string
	errs     Errors
}

func (d *decoder) errorf(rng hcl.Range, format string, args ...any) {
	d.errs.add(d.filename, rng, format, args...)
}

// policy decodes the top level of policy rules: blocks only.
func (d *decoder) policy(body *hclsyntax.Body) *Policy {
	p := &Policy{}
	for _, a := range sortedAttrs(body) {
		d.errorf(a.NameRange, "unknown attribute %q; a policy is made of blocks: %s", a.Name, strings.Join(blockTypes, ", "))
	}
	first := map[string]hcl.Range{} // blocks without a label, seen once
	for _, b := range body.Blocks {
		if slices.Contains(singletonBlocks, b.Type) {
			if prev, dup := first[b.Type]; dup {
				d.errorf(b.TypeRange, "duplicate %s block; the first is at line %d", b.Type, prev.Start.Line)
				continue
			}
			first[b.Type] = b.TypeRange
		}
		switch b.Type {
		case "namespace":
			if r := d.namespace(b); r != nil {
				p.Namespaces = append(p.Namespaces, r)
			}
		case "queue":
			if name, ok := d.ruleName(b); ok {
				policy, _ := d.ruleBody(fmt.Sprintf("queue %q", name), b.Body, coarsePolicies, nil, nil)
				p.Queues = append(p.Queues, &QueueRule{Name: name, Policy: policy})
			}
		case "node":
			p.Node = d.coarse(b)
		case "agent":
			p.Agent = d.coarse(b)
		case "operator":
			p.Operator = d.coarse(b)
		case "quota":
			p.Quota = d.coarse(b)
		// Drover does not enforce plugin, node_pool and host_volume rules
		// yet: they are checked, so that typos are caught, and dropped.
		case "plugin":
			if d.noLabels(b) {
				d.ruleBody("plugin", b.Body, pluginPolicies, nil, nil)
			}
		case "node_pool":
			if name, ok := d.oneLabel(b, "node pool"); ok {
				d.ruleBody(fmt.Sprintf("node_pool %q", name), b.Body, coarsePolicies, nodePoolCaps, nil)
			}
		case "host_volume":
			if name, ok := d.oneLabel(b, "host volume"); ok {
				d.ruleBody(fmt.Sprintf("host_volume %q", name), b.Body, coarsePolicies, hostVolumeCaps, nil)
			}
		default:
			d.errorf(b.TypeRange, "unknown block %q; want one of %s", b.Type, strings.Join(blockTypes, ", "))
		}
	}
	return p
}

// namespace decodes a namespace block, or returns nil when its name is
// missing or invalid.
func (d *decoder) namespace(b *hclsyntax.Block) *NamespaceRule {
	name, ok := d.ruleName(b)
	if !ok {
		return nil
	}
	ctx := fmt.Sprintf("namespace %q", name)
	// A namespace's variables block: path rules (acl/variables.go).
	var varRules []*VariablesPathRule
	variables := func(vb *hclsyntax.Block) {
		if !d.noLabels(vb) {
			return
		}
		for _, a := range sortedAttrs(vb.Body) {
			d.errorf(a.NameRange, "%s: variables: unknown attribute %q", ctx, a.Name)
		}
		for _, pb := range vb.Body.Blocks {
			if pb.Type != "path" {
				d.errorf(pb.TypeRange, "%s: variables: unknown block %q; want path", ctx, pb.Type)
				continue
			}
			if path, ok := d.oneLabel(pb, "variables path"); ok {
				_, caps := d.ruleBody(fmt.Sprintf("%s: variables: path %q", ctx, path), pb.Body, nil, variableCaps, nil)
				varRules = append(varRules, &VariablesPathRule{PathSpec: path, Capabilities: caps})
			}
		}
	}
	policy, caps := d.ruleBody(ctx, b.Body, namespacePolicies, namespaceCapabilities, map[string]func(*hclsyntax.Block){"variables": variables})
	return &NamespaceRule{Name: name, Policy: policy, Capabilities: caps, Variables: varRules}
}

// coarse decodes a node, agent, operator or quota block: its policy.
func (d *decoder) coarse(b *hclsyntax.Block) string {
	if !d.noLabels(b) {
		return ""
	}
	policy, _ := d.ruleBody(b.Type, b.Body, coarsePolicies, nil, nil)
	return policy
}

// ruleBody decodes the policy and capabilities attributes of a rule
// block, checking them against policies and caps; a nil list means the
// attribute is not allowed. nested decodes the blocks the body may hold,
// by type.
func (d *decoder) ruleBody(ctx string, body *hclsyntax.Body, policies, caps []string, nested map[string]func(*hclsyntax.Block)) (policy string, capabilities []string) {
	for _, a := range sortedAttrs(body) {
		switch {
		case a.Name == "policy" && policies != nil:
			if s, ok := d.str(ctx, a); ok {
				if !slices.Contains(policies, s) {
					d.errorf(a.Expr.Range(), "%s: unknown policy %q; want %s", ctx, s, orList(policies))
					continue
				}
				policy = s
			}
		case a.Name == "capabilities" && caps != nil:
			capabilities = d.capabilities(ctx, a, caps)
		default:
			d.errorf(a.NameRange, "%s: unknown attribute %q", ctx, a.Name)
		}
	}
	for _, b := range body.Blocks {
		if decode, ok := nested[b.Type]; ok {
			decode(b)
			continue
		}
		d.errorf(b.TypeRange, "%s: unknown block %q", ctx, b.Type)
	}
	return policy, capabilities
}

// capabilities decodes a list of capability names, each one of known.
func (d *decoder) capabilities(ctx string, a *hclsyntax.Attribute, known []string) []string {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		d.errs.addDiags(d.filename, diags)
		return nil
	}
	ty := v.Type()
	if !v.IsWhollyKnown() || v.IsNull() || !(ty.IsListType() || ty.IsTupleType() || ty.IsSetType()) {
		d.errorf(a.Expr.Range(), "%s: %s: want a list of strings", ctx, a.Name)
		return nil
	}
	var elems []hclsyntax.Expression
	if tuple, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
		elems = tuple.Exprs
	}
	out := []string{}
	for i, ev := range v.AsValueSlice() {
		rng := a.Expr.Range()
		if i < len(elems) {
			rng = elems[i].Range()
		}
		if ev.IsNull() || ev.Type() != cty.String {
			d.errorf(rng, "%s: %s: want a list of strings", ctx, a.Name)
			continue
		}
		c := ev.AsString()
		if !slices.Contains(known, c) {
			d.errorf(rng, "%s: unknown capability %q", ctx, c)
			continue
		}
		out = append(out, c)
	}
	return out
}

// str decodes a string attribute.
func (d *decoder) str(ctx string, a *hclsyntax.Attribute) (string, bool) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		d.errs.addDiags(d.filename, diags)
		return "", false
	}
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		d.errorf(a.Expr.Range(), "%s: %s: want a string", ctx, a.Name)
		return "", false
	}
	return v.AsString(), true
}

// ruleName returns the one label of a namespace or queue block, checked.
func (d *decoder) ruleName(b *hclsyntax.Block) (string, bool) {
	name, ok := d.oneLabel(b, b.Type)
	if ok && !validRuleName.MatchString(name) {
		d.errorf(b.LabelRanges[0], "%s %q: invalid name; want 1 to 128 letters, digits, dashes or * wildcards", b.Type, name)
		return "", false
	}
	return name, ok
}

func (d *decoder) oneLabel(b *hclsyntax.Block, what string) (string, bool) {
	if len(b.Labels) != 1 {
		d.errorf(b.TypeRange, "%s block: want one label, the %s name; got %d", b.Type, what, len(b.Labels))
		return "", false
	}
	if b.Labels[0] == "" {
		d.errorf(b.LabelRanges[0], "%s block: empty %s name", b.Type, what)
		return "", false
	}
	return b.Labels[0], true
}

func (d *decoder) noLabels(b *hclsyntax.Block) bool {
	if len(b.Labels) != 0 {
		d.errorf(b.LabelRanges[0], "%s block: want no labels; got %d", b.Type, len(b.Labels))
		return false
	}
	return true
}

// sortedAttrs returns a body's attributes in source order.
func sortedAttrs(body *hclsyntax.Body) []*hclsyntax.Attribute {
	attrs := make([]*hclsyntax.Attribute, 0, len(body.Attributes))
	for _, a := range body.Attributes {
		attrs = append(attrs, a)
	}
	slices.SortFunc(attrs, func(a, b *hclsyntax.Attribute) int {
		return cmp.Compare(a.NameRange.Start.Byte, b.NameRange.Start.Byte)
	})
	return attrs
}

// orList renders ["a", "b", "c"] as "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
