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
		blocks: []hcl.BlockHeaderSchema{block("job", "id"), block("variable", "name"), block("variables"), block("locals")},
	}
	jobSchema = &schema{
		attrs: []string{"type", "datacenters", "priority", "namespace", "queue", "region", "meta", "preemptible", "max_run_time", "all_at_once"},
		blocks: []hcl.BlockHeaderSchema{
			block("group", "name"), block("constraint"), block("affinity"), block("meta"),
			block("reschedule"), block("spread"), block("update"), block("ui"), block("migrate"),
			block("periodic"), block("parameterized"),
		},
		unsupported: []string{
			"multiregion",
			"vault", "consul", "identity", "node_pool", "vault_token",
			"consul_token", "consul_namespace",
		},
	}
	groupSchema = &schema{
		attrs: []string{"count", "meta", "max_client_disconnect", "shutdown_delay", "prevent_reschedule_on_lost"},
		blocks: []hcl.BlockHeaderSchema{
			block("task", "name"), block("constraint"), block("affinity"), block("restart"), block("meta"),
			block("reschedule"), block("spread"), block("update"), block("gang"), block("distributed"), block("network"), block("service"),
			block("volume", "name"), block("ephemeral_disk"), block("disconnect"),
			block("scaling"), block("migrate"), block("checkpoint"),
		},
		unsupported: []string{
			"consul", "vault",
			"stop_after_client_disconnect",
		},
	}
	gangSchema = &schema{
		attrs:  []string{"name", "min", "timeout"},
		blocks: []hcl.BlockHeaderSchema{block("network")}, // gang_network.go
	}
	restartSchema = &schema{
		attrs: []string{"attempts", "interval", "delay", "mode", "render_templates"},
	}
	rescheduleSchema = &schema{
		attrs: []string{"attempts", "interval", "delay", "delay_function", "max_delay", "unlimited"},
	}
	taskSchema = &schema{
		attrs: []string{"driver", "config", "env", "meta", "kill_timeout", "kill_signal", "user", "leader", "shutdown_delay", "kind"},
		blocks: []hcl.BlockHeaderSchema{
			block("config"), block("env"), block("meta"), block("resources"),
			block("constraint"), block("affinity"), block("logs"), block("service"),
			block("lifecycle"), block("volume_mount"), block("scaling", "name"), block("dispatch_payload"),
			block("template"), block("artifact"), // template.go
		},
		unsupported: []string{
			"vault",
			"restart", "identity", "csi_plugin",
			"consul", "action", "schedule", "secret",
		},
	}
	logsSchema = &schema{
		attrs: []string{"max_files", "max_file_size", "disabled", "enabled"},
	}
	resourcesSchema = &schema{
		attrs:       []string{"cpu", "memory", "memory_max", "disk", "cores"},
		blocks:      []hcl.BlockHeaderSchema{block("device", "name"), block("network"), block("numa")},
		unsupported: []string{"iops", "secrets"},
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
		if msg, refused := refusedIntegrations[b.Type]; refused && slices.Contains(unsupported, b.Type) {
			d.errorf(b.TypeRange, "Unsupported integration", "%s.", msg)
			continue
		}
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
