package allocrunner

import (
	"regexp"
	"strings"

	"github.com/droverhq/drover/structs"
)

// Runtime is what "${...}" in a task's env, driver config and args
// resolves against at the client, as in Nomad: the task's environment
// (NOMAD_*, DROVER_*, NOMAD_META_*; also as ${env["NAME"]}) and the node
// the task runs on (${node.unique.id}, ${node.unique.name},
// ${node.datacenter}, ${node.class}, ${node.pool}, ${attr.<name>},
// ${meta.<name>}). The job file's parser evaluated var.* and local.*
// already; anything still unknown here stays as written.
type Runtime struct {
	Env  map[string]string
	Node *structs.Node // nil: node values stay as written
}

// interpRe matches one interpolation: a dotted name or env["NAME"],
// with optional spaces inside the braces.
var interpRe = regexp.MustCompile(`\$\{\s*([A-Za-z_][A-Za-z0-9_.\-]*|env\["[^"\\]*"\])\s*\}`)

// Interpolate replaces each known ${...} in s.
func (r Runtime) Interpolate(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return interpRe.ReplaceAllStringFunc(s, func(m string) string {
		name := interpRe.FindStringSubmatch(m)[1]
		if v, ok := r.lookup(name); ok {
			return v
		}
		return m
	})
}

// lookup resolves one interpolation name.
func (r Runtime) lookup(name string) (string, bool) {
	if inner, ok := strings.CutPrefix(name, `env["`); ok {
		v, found := r.Env[strings.TrimSuffix(inner, `"]`)]
		return v, found
	}
	if v, ok := r.Env[name]; ok {
		return v, true
	}
	n := r.Node
	if n == nil {
		return "", false
	}
	switch name {
	case "node.unique.id":
		return n.ID, true
	case "node.unique.name":
		return n.Name, true
	case "node.datacenter":
		return n.Datacenter, true
	case "node.class":
		return n.NodeClass, true
	case "node.pool":
		return nodePool(n), true
	}
	if attr, ok := strings.CutPrefix(name, "attr."); ok {
		v, found := n.Attributes[attr]
		return v, found
	}
	if key, ok := strings.CutPrefix(name, "meta."); ok {
		v, found := n.Meta[key]
		return v, found
	}
	return "", false
}

// nodePool is the node's pool; Drover's nodes are all in Nomad's
// "default" pool until pools exist.
func nodePool(*structs.Node) string { return "default" }

// Config returns a copy of a driver config with every string, in nested
// lists and maps too, interpolated.
func (r Runtime) Config(cfg map[string]any) map[string]any {
	if cfg == nil {
		return nil
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		out[k] = r.value(v)
	}
	return out
}

func (r Runtime) value(v any) any {
	switch x := v.(type) {
	case string:
		return r.Interpolate(x)
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = r.Interpolate(s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.value(e)
		}
		return out
	case map[string]any:
		return r.Config(x)
	}
	return v
}
