package feasible

import (
	"strings"
	"sync"

	"github.com/droverhq/drover/structs"
)

// Bounds on a NodeCache's size. A node rarely meets more than a handful
// of kinds of ask; past maxKindsPerNode its entry starts over. Past
// maxCachedNodes IDs (nodes come and go) the whole cache starts over.
const (
	maxKindsPerNode = 16
	maxCachedNodes  = 1 << 17
)

// NodeCache remembers, across evaluations and for each kind of ask, what
// the node filters concluded about a node and which of its device
// instances each device request matches. Those depend only on the node
// object and on the ask's datacenters, drivers, constraints and device
// requests (not on counts, usage or health), so a scheduler that keeps one
// cache for all its evaluations works out each (node, kind of ask) once
// instead of once per evaluation.
//
// Entries are keyed by the node object: the state store never changes a
// node it holds (an update inserts a new object), so an entry made for an
// older object of the same ID is dropped when the new one is met. Safe
// for concurrent use by several scheduler workers.
type NodeCache struct {
	mu    sync.Mutex
	nodes map[string]*nodeEntry
}

// nodeEntry is what is known about one node object, per kind of ask.
type nodeEntry struct {
	node  *structs.Node
	kinds map[string]*nodeVerdict
}

// nodeVerdict is what the filters and the device matcher concluded for
// one kind of ask. Both fields are written once, before the verdict is
// shared, and never changed.
type nodeVerdict struct {
	filtered bool
	reason   string       // the first filter that refused the node
	devices  *nodeDevices // nil until matched
}

// NewNodeCache returns an empty cache.
func NewNodeCache() *NodeCache { return &NodeCache{nodes: map[string]*nodeEntry{}} }

// lookup returns what is cached for n and kind, or nil.
func (c *NodeCache) lookup(n *structs.Node, kind string) *nodeVerdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.nodes[n.ID]
	if e == nil || e.node != n {
		return nil
	}
	return e.kinds[kind]
}

// store records v for n and kind and returns the verdict the cache holds
// for them (v, or one another worker stored first).
func (c *NodeCache) store(n *structs.Node, kind string, v *nodeVerdict) *nodeVerdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.nodes[n.ID]
	if e == nil || e.node != n {
		if e == nil && len(c.nodes) >= maxCachedNodes {
			c.nodes = map[string]*nodeEntry{}
		}
		e = &nodeEntry{node: n, kinds: map[string]*nodeVerdict{}}
		c.nodes[n.ID] = e
	}
	if old, ok := e.kinds[kind]; ok {
		return old
	}
	if len(e.kinds) >= maxKindsPerNode {
		e.kinds = map[string]*nodeVerdict{}
	}
	e.kinds[kind] = v
	return v
}

// askKind is the part of an ask that the node filters and the device
// matcher depend on, as one string: two asks of the same kind get the
// same verdict and device matches on every node.
func askKind(a *ask, datacenters []string) string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(s)
		b.WriteByte(0)
	}
	for _, dc := range datacenters {
		field(dc)
	}
	b.WriteByte(1)
	for _, d := range a.drivers() {
		field(d)
	}
	b.WriteByte(1)
	constraint := func(c *structs.Constraint) {
		field(c.LTarget)
		field(c.Operand)
		field(c.RTarget)
	}
	for _, c := range a.constraints() {
		constraint(c)
	}
	b.WriteByte(1)
	for _, v := range hostVolumeKind(a.group) {
		field(v)
	}
	for _, d := range a.devices {
		b.WriteByte(1)
		field(d.req.Name)
		for _, c := range d.req.Constraints {
			constraint(c)
		}
	}
	return b.String()
}
