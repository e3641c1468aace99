package structs

import (
	"errors"
	"fmt"
	"slices"
	"unicode"
)

// Network topology levels a node declares (client { topology { ... } })
// and a gang may ask to stay within (gang { network { level = ... } }),
// from the closest to the widest.
const (
	TopologyBlock = "block" // e.g. one NVL72 NVLink domain
	TopologyRack  = "rack"
	TopologySpine = "spine"
)

// TopologyLevels lists the levels, closest first.
var TopologyLevels = []string{TopologyBlock, TopologyRack, TopologySpine}

// TopologyAttrPrefix prefixes the node attributes that carry a node's
// place in the network: topology.block, topology.rack, topology.spine.
// Constraints, affinities and spreads can use them like any attribute.
const TopologyAttrPrefix = "topology."

// MaxTopologyValueLen bounds a topology value.
const MaxTopologyValueLen = 64

// Gang network modes.
const (
	GangNetworkRequired  = "required"
	GangNetworkPreferred = "preferred"
)

// NodeTopology is a node's place in the network, from the client's
// configuration; a level left empty is unknown.
type NodeTopology struct {
	Block string
	Rack  string
	Spine string
}

// Attributes returns the node attributes for t (only the levels set).
func (t *NodeTopology) Attributes() map[string]string {
	out := map[string]string{}
	if t == nil {
		return out
	}
	for level, v := range map[string]string{TopologyBlock: t.Block, TopologyRack: t.Rack, TopologySpine: t.Spine} {
		if v != "" {
			out[TopologyAttrPrefix+level] = v
		}
	}
	return out
}

// Validate checks every value: short and printable, without spaces.
func (t *NodeTopology) Validate() error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, kv := range [][2]string{{TopologyBlock, t.Block}, {TopologyRack, t.Rack}, {TopologySpine, t.Spine}} {
		if err := validTopologyValue(kv[1]); err != nil {
			errs = append(errs, fmt.Errorf("topology %s: %w", kv[0], err))
		}
	}
	return errors.Join(errs...)
}

func validTopologyValue(v string) error {
	if len(v) > MaxTopologyValueLen {
		return fmt.Errorf("%d bytes, at most %d", len(v), MaxTopologyValueLen)
	}
	for _, r := range v {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%q holds a space or an unprintable character", v)
		}
	}
	return nil
}

// TopologyValue is the node's value at level ("" when it declares none).
func (n *Node) TopologyValue(level string) string {
	if n == nil {
		return ""
	}
	return n.Attributes[TopologyAttrPrefix+level]
}

// GangNetwork keeps a gang's members close on the network (Drover's,
// `gang { network { level = "rack"  mode = "required" } }`): all members
// on nodes that share one value at Level. Required: a gang that fits in
// no single domain waits; preferred: it is placed across as few domains
// as it can.
type GangNetwork struct {
	Level string
	Mode  string
}

// Copy returns a copy of n.
func (n *GangNetwork) Copy() *GangNetwork {
	if n == nil {
		return nil
	}
	c := *n
	return &c
}

// Canonicalize fills the default mode, required.
func (n *GangNetwork) Canonicalize() {
	if n != nil && n.Mode == "" {
		n.Mode = GangNetworkRequired
	}
}

// Required reports whether the gang must fit in one domain.
func (n *GangNetwork) Required() bool { return n != nil && n.Mode != GangNetworkPreferred }

// Validate checks the level and the mode.
func (n *GangNetwork) Validate() error {
	if n == nil {
		return nil
	}
	var errs []error
	if !slices.Contains(TopologyLevels, n.Level) {
		errs = append(errs, fmt.Errorf("gang network level %q must be one of block, rack, spine", n.Level))
	}
	if n.Mode != GangNetworkRequired && n.Mode != GangNetworkPreferred {
		errs = append(errs, fmt.Errorf("gang network mode %q must be required or preferred", n.Mode))
	}
	return errors.Join(errs...)
}
