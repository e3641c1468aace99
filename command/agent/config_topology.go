package agent

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// TopologyConfig is the client's place in the network (Drover's), which
// the node reports as the attributes topology.block, topology.rack and
// topology.spine; a gang's network block keeps its members under one
// value of a level.
//
//	topology {
//	  block = "nvl72-07"
//	  rack  = "r12"
//	  spine = "s3"
//	}
type TopologyConfig struct {
	Block string `hcl:"block,optional"`
	Rack  string `hcl:"rack,optional"`
	Spine string `hcl:"spine,optional"`
}

// topology returns what the node reports (nil: no block).
func (t *TopologyConfig) topology() *structs.NodeTopology {
	if t == nil {
		return nil
	}
	return &structs.NodeTopology{Block: t.Block, Rack: t.Rack, Spine: t.Spine}
}

// mergeTopology takes the later file's block, level by level.
func (c *ClientConfig) mergeTopology(o *ClientConfig) {
	if o.Topology == nil {
		return
	}
	if c.Topology == nil {
		c.Topology = &TopologyConfig{}
	}
	if o.Topology.Block != "" {
		c.Topology.Block = o.Topology.Block
	}
	if o.Topology.Rack != "" {
		c.Topology.Rack = o.Topology.Rack
	}
	if o.Topology.Spine != "" {
		c.Topology.Spine = o.Topology.Spine
	}
}

// validateTopology checks the values: short, printable, no spaces.
func (c *ClientConfig) validateTopology() []error {
	if err := c.Topology.topology().Validate(); err != nil {
		return []error{fmt.Errorf("agent config: client.%w", err)}
	}
	return nil
}
