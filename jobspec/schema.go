package jobspec

import (
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// schema is what one kind of block may contain.
type schema struct {
	attrs  []string
	blocks []hcl.BlockHeaderSchema
	// unsupported are Nomad arguments and blocks that Drover does not
	// implement yet: they get a clear error instead of "unknown".
	unsupported []string
}

func (s *schema) bodySchema() *hcl.BodySchema {
	bs := &hcl.BodySchema{Blocks: s.blocks}
	for _, a := range s.attrs {
		bs.Attributes = append(bs.Attributes, hcl.AttributeSchema{Name: a})
	}
	return bs
}

func block(typ string, labels ...string) hcl.BlockHeaderSchema {
	return hcl.BlockHeaderSchema{Type: typ, LabelNames: labels}
}

var (
	rootSchema = &schema{
		blocks:      []hcl.BlockHeaderSchema{block("job", "id")},
		unsupported: []string{"variable", "variables", "locals"},
	}
	jobSchema = &schema{
		attrs: []string{"type", "datacenters", "priority", "namespace", "queue", "region", "meta", "preemptible", "max_run_time"},
		blocks: []hcl.BlockHeaderSchema{
			block("group", "name"), block("constraint"), block("affinity"), block("meta"),
			block("reschedule"), block("spread"), block("update"),
		},
		unsupported: []string{
			"periodic", "parameterized", "multiregion",
			"migrate", "vault", "consul", "ui", "all_at_once", "node_pool", "vault_token",
			"consul_token", "consul_namespace",
		},
	}
	groupSchema = &schema{
		attrs: []string{"count", "meta"},
		blocks: []hcl.BlockHeaderSchema{
			block("task", "name"), block("constraint"), block("affinity"), block("restart"), block("meta"),
			block("reschedule"), block("spread"), block("update"), block("gang"),
		},
		unsupported: []string{
			"network", "service", "volume", "ephemeral_disk",
			"migrate", "scaling", "disconnect", "consul", "max_client_disconnect",
			"stop_after_client_disconnect", "shutdown_delay", "prevent_reschedule_on_lost",
		},
	}
	gangSchema = &schema{
		attrs: []string{"name", "min", "timeout"},
	}
	restartSchema = &schema{
		attrs:       []string{"attempts", "interval", "delay", "mode"},
		unsupported: []string{"render_templates"},
	}
	rescheduleSchema = &schema{
		attrs: []string{"attempts", "interval", "delay", "delay_function", "max_delay", "unlimited"},
	}
	taskSchema = &schema{
		attrs: []string{"driver", "config", "env", "meta", "kill_timeout", "kill_signal", "user"},
		blocks: []hcl.BlockHeaderSchema{
			block("config"), block("env"), block("meta"), block("resources"),
			block("constraint"), block("affinity"), block("logs"),
			block("template"), block("artifact"), // template.go
		},
		unsupported: []string{
			"service", "vault", "volume_mount", "lifecycle",
			"restart", "scaling", "identity", "dispatch_payload", "csi_plugin", "kind",
			"leader", "shutdown_delay", "consul", "action", "schedule", "secret",
		},
	}
	logsSchema = &schema{
		attrs:       []string{"max_files", "max_file_size"},
		unsupported: []string{"disabled", "enabled"},
	}
	resourcesSchema = &schema{
		attrs:       []string{"cpu", "memory"},
		blocks:      []hcl.BlockHeaderSchema{block("device", "name")},
		unsupported: []string{"network", "numa", "cores", "memory_max", "disk", "iops", "secrets"},
	}
	deviceSchema = &schema{
		attrs:  []string{"count", "topology", "memory", "compute"},
		blocks: []hcl.BlockHeaderSchema{block("constraint"), block("affinity")},
	}
	constraintSchema = &schema{
		attrs: append([]string{"attribute", "operator", "value", "distinct_hosts", "distinct_property"}, shorthandOperators...),
	}
	affinitySchema = &schema{
		attrs: append([]string{"attribute", "operator", "value", "weight"}, shorthandOperators...),
	}
)

// content checks body against s: every argument and block must be one s
// allows. Nomad items that Drover lacks are reported as not supported yet.
// Attributes in the result are read in source order by the callers that
// need an order (see sortedAttrs).
func (d *decoder) content(body hcl.Body, s *schema) *hcl.BodyContent {
	if sb, ok := body.(*hclsyntax.Body); ok && len(s.unsupported) > 0 {
		body = d.dropUnsupported(sb, s.unsupported)
	}
	c, diags := body.Content(s.bodySchema())
	d.diags = append(d.diags, diags...)
	return c
}

// dropUnsupported reports the unsupported items of body and returns a
// copy of body without them.
func (d *decoder) dropUnsupported(body *hclsyntax.Body, unsupported []string) *hclsyntax.Body {
	out := &hclsyntax.Body{
		Attributes: hclsyntax.Attributes{},
		SrcRange:   body.SrcRange,
		EndRange:   body.EndRange,
	}
	names := make([]string, 0, len(body.Attributes))
	for name := range body.Attributes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		a := body.Attributes[name]
		if slices.Contains(unsupported, name) {
			d.errorf(a.NameRange, "Unsupported argument", "The argument %q is not supported by Drover yet.", name)
			continue
		}
		out.Attributes[name] = a
	}
	for _, b := range body.Blocks {
		if slices.Contains(unsupported, b.Type) {
			d.errorf(b.TypeRange, "Unsupported block type", "Blocks of type %q are not supported by Drover yet.", b.Type)
			continue
		}
		out.Blocks = append(out.Blocks, b)
	}
	return out
}

// single returns the one block of typ in c, or nil; more than one is an
// error reported at the second.
func (d *decoder) single(c *hcl.BodyContent, typ string) *hcl.Block {
	blocks := c.Blocks.OfType(typ)
	if len(blocks) == 0 {
		return nil
	}
	if len(blocks) > 1 {
		d.errorf(blocks[1].DefRange, "Duplicate "+typ+" block", "Only one %s block is allowed here; the first is at line %d.", typ, blocks[0].DefRange.Start.Line)
	}
	return blocks[0]
}
