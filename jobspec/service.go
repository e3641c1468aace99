package jobspec

import (
	"math"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// Schemas of service, check and check_restart blocks (Nomad's). Consul
// Connect and Consul-only arguments are not Drover's.
var (
	serviceSchema = &schema{
		attrs: []string{
			"name", "port", "tags", "canary_tags", "address_mode", "address",
			"provider", "task", "on_update", "meta",
		},
		blocks: []hcl.BlockHeaderSchema{block("check"), block("check_restart"), block("meta")},
		unsupported: []string{
			"connect", "canary_meta", "tagged_addresses", "enable_tag_override",
			"weights", "identity", "cluster", "kind",
		},
	}
	checkSchema = &schema{
		attrs: []string{
			"name", "type", "path", "method", "protocol", "command", "args", "task",
			"port", "address_mode", "interval", "timeout", "on_update",
			"success_before_passing", "failures_before_critical", "body", "tls_skip_verify",
		},
		blocks: []hcl.BlockHeaderSchema{block("header"), block("check_restart")},
		unsupported: []string{
			"expose", "advertise", "initial_status", "notes", "tls_server_name",
			"grpc_service", "grpc_use_tls", "failures_before_warning",
		},
	}
	checkRestartSchema = &schema{attrs: []string{"limit", "grace", "ignore_warnings"}}
)

// refusedIntegrations are Nomad blocks naming an integration Drover does
// not have: they parse as known blocks and are refused with what to use
// instead, never silently dropped.
var refusedIntegrations = map[string]string{
	"consul":     `consul: Drover has no Consul integration; services register in Drover's own registry with provider = "nomad"`,
	"vault":      "vault: Drover has no Vault integration; use Drover variables (drover var) and template's nomadVar instead",
	"identity":   "identity: Drover has no workload identity integration (Nomad issues these tokens for Consul and Vault)",
	"csi_plugin": "csi_plugin: Drover has no CSI integration; use host volumes instead",
	"connect":    "connect: Drover has no Consul integration, so no Consul Connect service mesh; use host-mode ports and provider = \"nomad\" services",
}

var checkTypes = []string{structs.ServiceCheckHTTP, structs.ServiceCheckTCP, structs.ServiceCheckScript}

// services decodes the service blocks in c.
func (d *decoder) services(c *hcl.BodyContent) []*structs.Service {
	var out []*structs.Service
	for _, b := range c.Blocks.OfType("service") {
		if s := d.service(b); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// service decodes one service block. Checks come out canonicalized by
// Job.Canonicalize; what needs the group (tasks, ports) is checked by
// Job.Validate.
func (d *decoder) service(b *hcl.Block) *structs.Service {
	s := &structs.Service{}
	c := d.content(b.Body, serviceSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "name":
			s.Name, _ = d.str(a)
		case "port":
			s.PortLabel, _ = d.str(a)
		case "tags":
			s.Tags, _ = d.stringList(a)
		case "canary_tags":
			s.CanaryTags, _ = d.stringList(a)
		case "address_mode":
			s.AddressMode, _ = d.str(a)
		case "address":
			s.Address, _ = d.str(a)
		case "task":
			s.TaskName, _ = d.str(a)
		case "on_update":
			s.OnUpdate, _ = d.str(a)
		case "provider":
			s.Provider = d.provider(a, s.Name, c)
		}
	}
	s.Meta = d.stringMap(c, "meta")
	if r := d.single(c, "check_restart"); r != nil {
		s.CheckRestart = d.checkRestart(r)
	}
	for _, blk := range c.Blocks.OfType("check") {
		s.Checks = append(s.Checks, d.serviceCheck(blk))
	}
	return s
}

// provider reads a service's provider: "nomad", or "consul" refused.
func (d *decoder) provider(a *hcl.Attribute, name string, c *hcl.BodyContent) string {
	p, ok := d.str(a)
	if !ok {
		return ""
	}
	if name == "" {
		if n := c.Attributes["name"]; n != nil {
			name, _ = d.str(n)
		}
	}
	switch p {
	case structs.ServiceProviderNomad:
		return p
	case structs.ServiceProviderConsul:
		d.errorf(a.Expr.Range(), "Unsupported service provider", "service %q: provider %q: %s.", name, p, structs.ErrServiceConsul)
	default:
		d.errorf(a.Expr.Range(), "Invalid service provider", "service %q: provider %q is not %q.", name, p, structs.ServiceProviderNomad)
	}
	return ""
}

// serviceCheck decodes a check block.
func (d *decoder) serviceCheck(b *hcl.Block) *structs.ServiceCheck {
	ck := &structs.ServiceCheck{}
	c := d.content(b.Body, checkSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		d.checkAttr(ck, a)
	}
	if c.Attributes["type"] == nil {
		d.errorf(b.DefRange, "Missing required argument", "A check needs a type: one of http, tcp, script.")
	}
	if c.Attributes["interval"] == nil || c.Attributes["timeout"] == nil {
		d.errorf(b.DefRange, "Missing required argument", "A check needs an interval and a timeout.")
	}
	if h := d.single(c, "header"); h != nil {
		ck.Header = d.header(h)
	}
	if r := d.single(c, "check_restart"); r != nil {
		ck.CheckRestart = d.checkRestart(r)
	}
	return ck
}

// checkAttr sets the field of ck that a names.
func (d *decoder) checkAttr(ck *structs.ServiceCheck, a *hcl.Attribute) {
	strs := map[string]*string{
		"name": &ck.Name, "path": &ck.Path, "method": &ck.Method, "protocol": &ck.Protocol,
		"command": &ck.Command, "task": &ck.TaskName, "port": &ck.PortLabel,
		"address_mode": &ck.AddressMode, "on_update": &ck.OnUpdate, "body": &ck.Body,
	}
	if f := strs[a.Name]; f != nil {
		*f, _ = d.str(a)
		return
	}
	switch a.Name {
	case "type":
		v, ok := d.str(a)
		if ok && !slices.Contains(checkTypes, v) {
			d.errorf(a.Expr.Range(), "Unsupported check type", "Check type %q is not supported by Drover; use one of http, tcp, script.", v)
		}
		ck.Type = v
	case "args":
		ck.Args, _ = d.stringList(a)
	case "tls_skip_verify":
		ck.TLSSkipVerify, _ = d.boolean(a)
	case "interval":
		ck.Interval, _ = d.duration(a)
	case "timeout":
		ck.Timeout, _ = d.duration(a)
	case "success_before_passing":
		n, _ := d.integer(a, 0, 1000)
		ck.SuccessBeforePassing = int(n)
	case "failures_before_critical":
		n, _ := d.integer(a, 0, 1000)
		ck.FailuresBeforeCritical = int(n)
	}
}

// header decodes a check's header block: each argument is a list of
// values.
func (d *decoder) header(b *hcl.Block) map[string][]string {
	attrs, diags := b.Body.JustAttributes()
	d.diags = append(d.diags, diags...)
	out := make(map[string][]string, len(attrs))
	for _, a := range sortedAttrs(attrs) {
		if v, ok := d.stringList(a); ok {
			out[a.Name] = v
		}
	}
	return out
}

// checkRestart decodes a check_restart block.
func (d *decoder) checkRestart(b *hcl.Block) *structs.CheckRestart {
	r := &structs.CheckRestart{}
	c := d.content(b.Body, checkRestartSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "limit":
			n, _ := d.integer(a, 0, math.MaxInt16)
			r.Limit = int(n)
		case "grace":
			r.Grace, _ = d.duration(a)
		case "ignore_warnings":
			r.IgnoreWarnings, _ = d.boolean(a)
		}
	}
	return r
}
