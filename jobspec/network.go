package jobspec

import (
	"math"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// networkSchema is a network block, in a group or (Nomad's older place)
// in a task's resources. Drover runs host networking only: mode "bridge"
// and "cni/*" parse and are refused with the reason.
var (
	networkSchema = &schema{
		attrs:       []string{"mode", "mbits"},
		blocks:      []hcl.BlockHeaderSchema{block("port", "label")},
		unsupported: []string{"dns", "hostname", "cni"},
	}
	portSchema = &schema{
		attrs: []string{"static", "to", "host_network"},
	}
)

// networks decodes the network blocks of c: at most one (more is an
// error at the second), its ports labelled uniquely within the group
// (d.portLabels spans the group's and its tasks' networks).
func (d *decoder) networks(c *hcl.BodyContent) []*structs.NetworkResource {
	b := d.single(c, "network")
	if b == nil {
		return nil
	}
	return []*structs.NetworkResource{d.network(b)}
}

// network decodes one network block.
func (d *decoder) network(b *hcl.Block) *structs.NetworkResource {
	n := &structs.NetworkResource{}
	c := d.content(b.Body, networkSchema)
	if a := c.Attributes["mode"]; a != nil {
		if v, ok := d.str(a); ok {
			n.Mode = v
			if err := n.ValidateMode(); err != nil {
				d.errorf(a.Expr.Range(), "Unsupported network mode", "%s.", strings.TrimPrefix(err.Error(), "network: "))
			}
		}
	}
	if a := c.Attributes["mbits"]; a != nil {
		// Deprecated in Nomad and not enforced there either: checked
		// and ignored, so older job files run unchanged.
		d.integer(a, 0, math.MaxInt32)
	}
	ports := c.Blocks.OfType("port")
	if len(ports) > structs.MaxPortsPerGroup {
		d.errorf(ports[structs.MaxPortsPerGroup].DefRange, "Too many ports", "A group asks for at most %d ports.", structs.MaxPortsPerGroup)
		ports = ports[:structs.MaxPortsPerGroup]
	}
	for _, pb := range ports {
		p, static := d.port(pb)
		if static {
			n.ReservedPorts = append(n.ReservedPorts, p)
		} else {
			n.DynamicPorts = append(n.DynamicPorts, p)
		}
	}
	return n
}

// port decodes a port block; static says whether it names a static port.
func (d *decoder) port(b *hcl.Block) (p structs.Port, static bool) {
	p.Label = b.Labels[0]
	if first, dup := d.portLabels[p.Label]; dup {
		d.errorf(b.LabelRanges[0], "Duplicate port", "A port labelled %q is already defined in this group at line %d.", p.Label, first.Start.Line)
	} else if d.portLabels != nil {
		d.portLabels[p.Label] = b.DefRange
	}
	c := d.content(b.Body, portSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "static":
			if v, ok := d.integer(a, 1, structs.MaxPort); ok {
				p.Value, static = int(v), true
			}
		case "to":
			if v, ok := d.integer(a, -1, structs.MaxPort); ok {
				p.To = int(v)
			}
		case "host_network":
			p.HostNetwork, _ = d.str(a)
		}
	}
	errs := p.Validate(map[string]bool{}, static)
	for _, err := range errs {
		d.errorf(b.DefRange, "Invalid port", "%s.", strings.TrimPrefix(err.Error(), "network: "))
	}
	return p, static
}
