package feasible

import (
	"maps"
	"slices"

	"github.com/droverhq/drover/structs"
)

// HostVolumeFilter rejects nodes that do not offer a host volume the
// group's volume blocks name, or offer it read-only where the group
// needs to write (a volume request without read_only).
type HostVolumeFilter struct {
	// needs maps host volume names to whether writing is needed.
	needs map[string]bool
	names []string // sorted, for stable reasons
}

// NewHostVolumeFilter returns the group's filter, or nil when it asks
// for no host volume.
func NewHostVolumeFilter(tg *structs.TaskGroup) *HostVolumeFilter {
	needs := tg.HostVolumeNeeds()
	if len(needs) == 0 {
		return nil
	}
	return &HostVolumeFilter{needs: needs, names: slices.Sorted(maps.Keys(needs))}
}

// Filter implements Filter.
func (f *HostVolumeFilter) Filter(n *structs.Node) (bool, string) {
	for _, name := range f.names {
		hv := n.HostVolumes[name]
		switch {
		case hv == nil:
			return false, "missing host volume " + name
		case hv.ReadOnly && f.needs[name]:
			return false, "host volume " + name + " is read-only"
		}
	}
	return true, ""
}

// hostVolumeKind is the filter's part of an ask's kind (nodecache.go).
func hostVolumeKind(tg *structs.TaskGroup) []string {
	f := NewHostVolumeFilter(tg)
	if f == nil {
		return nil
	}
	out := make([]string, 0, len(f.names))
	for _, name := range f.names {
		w := "r"
		if f.needs[name] {
			w = "w"
		}
		out = append(out, name+":"+w)
	}
	return out
}
