package structs

import (
	"errors"
	"fmt"
	"slices"
)

// Frameworks of a distributed block: which launcher's variables the
// client sets next to Drover's own DROVER_GANG_* ones.
const (
	FrameworkTorch = "torch"
	FrameworkJAX   = "jax"
	FrameworkMPI   = "mpi"
	FrameworkNone  = "none"
)

// MaxProcsPerNode bounds procs_per_node (a node runs one process per GPU
// or so; this only stops absurd values).
const MaxProcsPerNode = 1024

// RendezvousPortLabel is the dynamic port every allocation of a gang or
// distributed group gets: rank 0's is the rendezvous address.
const RendezvousPortLabel = "rendezvous"

// DistributedConfig is a group's distributed block (Drover's extension,
// `distributed { framework = "torch"  procs_per_node = 1 }`): each
// allocation of the group is one node of a training job, ranked by its
// name index, and its tasks get the framework's rendezvous variables.
type DistributedConfig struct {
	Framework    string
	ProcsPerNode int
}

// Copy returns a copy of d.
func (d *DistributedConfig) Copy() *DistributedConfig {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}

// Canonicalize fills the defaults: framework "none", one process per
// node.
func (d *DistributedConfig) Canonicalize() {
	if d == nil {
		return
	}
	if d.Framework == "" {
		d.Framework = FrameworkNone
	}
	if d.ProcsPerNode == 0 {
		d.ProcsPerNode = 1
	}
}

// Validate checks the framework and procs_per_node.
func (d *DistributedConfig) Validate() error {
	if d == nil {
		return nil
	}
	c := *d
	c.Canonicalize()
	d = &c
	var errs []error
	if !slices.Contains([]string{FrameworkTorch, FrameworkJAX, FrameworkMPI, FrameworkNone}, d.Framework) {
		errs = append(errs, fmt.Errorf("distributed framework %q is not one of torch, jax, mpi, none", d.Framework))
	}
	if d.ProcsPerNode < 1 || d.ProcsPerNode > MaxProcsPerNode {
		errs = append(errs, fmt.Errorf("distributed procs_per_node %d: want 1 to %d", d.ProcsPerNode, MaxProcsPerNode))
	}
	if d.Framework == FrameworkJAX && d.ProcsPerNode > 1 {
		errs = append(errs, errors.New("distributed procs_per_node > 1 is not supported for jax: JAX runs one process per node"))
	}
	return errors.Join(errs...)
}

// Rendezvous reports whether the group's allocations get rendezvous
// variables: it is a gang or has a distributed block.
func (tg *TaskGroup) Rendezvous() bool {
	return tg.Gang != nil || tg.Distributed != nil
}

// HasRendezvousPort reports whether one of the group's networks has the
// rendezvous port: canonicalize gives it to every gang or distributed
// group, but a job registered before gangs had one does not.
func (tg *TaskGroup) HasRendezvousPort() bool {
	for _, n := range tg.GroupNetworks() {
		if n == nil {
			continue
		}
		for _, p := range append(slices.Clone(n.ReservedPorts), n.DynamicPorts...) {
			if p.Label == RendezvousPortLabel {
				return true
			}
		}
	}
	return false
}

// canonicalizeRendezvous gives a gang or distributed group its
// rendezvous port, unless one of its networks already has that label.
func (tg *TaskGroup) canonicalizeRendezvous() {
	tg.Distributed.Canonicalize()
	if !tg.Rendezvous() {
		return
	}
	if tg.HasRendezvousPort() {
		return
	}
	if len(tg.Networks) == 0 {
		tg.Networks = []*NetworkResource{{Mode: NetworkModeHost}}
	}
	if tg.Networks[0] == nil {
		return // Validate refuses a null network
	}
	tg.Networks[0].DynamicPorts = append(tg.Networks[0].DynamicPorts, Port{Label: RendezvousPortLabel})
}
