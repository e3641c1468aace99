package jobspec

import (
	"math"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// resources decodes a resources block: cpu in MHz, memory in MB (or a size
// with units) and device requests.
func (d *decoder) resources(b *hcl.Block) *structs.Resources {
	r := &structs.Resources{}
	c := d.content(b.Body, resourcesSchema)
	if a := c.Attributes["cpu"]; a != nil {
		if n, ok := d.integer(a, 0, math.MaxInt32); ok {
			r.CPU = int(n)
		}
	}
	if a := c.Attributes["memory"]; a != nil {
		if mb, ok := d.sizeMB(a); ok {
			r.MemoryMB = int(mb)
		}
	}
	d.resourcesMisc(c, r) // misc_resources.go
	for _, blk := range c.Blocks.OfType("device") {
		r.Devices = appendNonNil(r.Devices, d.device(blk))
	}
	r.Networks = d.networks(c)
	return r
}

var topologies = []string{"any", "nvlink", "numa"}

// device decodes a device request. memory and compute ask for a slice of
// one GPU (a fractional request), so they need count = 1.
func (d *decoder) device(b *hcl.Block) *structs.RequestedDevice {
	dev := &structs.RequestedDevice{Name: b.Labels[0]}
	if _, _, _, err := structs.ParseDeviceName(dev.Name); err != nil {
		d.errorf(b.LabelRanges[0], "Invalid device name", "%s.", err)
	}
	c := d.content(b.Body, deviceSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "count":
			if n, ok := d.integer(a, 1, math.MaxInt32); ok {
				dev.Count = uint64(n)
			}
		case "topology":
			dev.Topology = d.oneOf(a, topologies)
		case "memory":
			dev.MemoryMB, _ = d.sizeMB(a)
		case "compute":
			dev.Compute = d.percent(a)
		}
	}
	if dev.IsFractional() && dev.Count > 1 {
		d.errorf(c.Attributes["count"].Expr.Range(), "Invalid device request",
			"A fractional request (memory or compute) asks for a slice of one device, so count must be 1, not %d.", dev.Count)
	}
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "constraint":
			dev.Constraints = appendNonNil(dev.Constraints, d.constraint(blk))
		case "affinity":
			dev.Affinities = appendNonNil(dev.Affinities, d.affinity(blk))
		}
	}
	return dev
}

// percent reads a percentage between 1 and 100, as a number or a string
// with an optional "%".
func (d *decoder) percent(a *hcl.Attribute) int {
	v, ok := d.value(a.Expr)
	if !ok {
		return 0
	}
	if s, isString := v.(string); isString {
		v = strings.TrimSuffix(strings.TrimSpace(s), "%")
	}
	n, _ := d.intValue(a, v, 1, 100)
	return int(n)
}
