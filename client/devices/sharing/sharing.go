// Package sharing decides how a node lets allocations share each of its
// GPU instances (the agent's gpu_sharing config) and labels every GPU
// instance with the "sharing" attribute the scheduler reads
// (structs.DeviceAttrSharing, ${device.attr.sharing}).
//
// Modes, most specific first: a mode for one GPU (by UUID; a MIG
// instance also matches its parent's UUID), for a model, for the node;
// else the default. The default is exclusive for a real GPU (as on Nomad
// and Kubernetes, a GPU is one task's unless the operator says
// otherwise), time-slicing for a simulated one (so fractional requests
// work in dev mode, accounted and labelled), and mig for a MIG instance.
//
// A mode the hardware cannot honour is not claimed: mig on a GPU not in
// MIG mode, or mps on a real GPU without the MPS control program, makes
// the GPU exclusive, with a warning; a MIG instance is mig or exclusive.
//
// It does no I/O and runs nothing: whether MPS is available is the
// caller's to say (Host).
package sharing

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/droverhq/drover/client/devices/nvidia"
	"github.com/droverhq/drover/structs"
)

// Policy is a node's gpu_sharing config. Modes are structs.Sharing*
// values, checked by the agent's config parser; "" means not set.
type Policy struct {
	// Mode applies to every GPU the other fields do not name.
	Mode string
	// Models maps a model name, as the node reports it with or without the
	// vendor's word ("NVIDIA A100-SXM4-40GB" or "A100-SXM4-40GB"), to a
	// mode. A MIG instance matches its parent's model.
	Models map[string]string
	// GPUs maps a GPU UUID to a mode. A MIG instance matches its own UUID
	// or its parent's.
	GPUs map[string]string
}

// Host is what the node can do for sharing.
type Host struct {
	// MPS: the MPS control program (nvidia-cuda-mps-control) is there.
	MPS bool
}

// Apply sets the sharing attribute on every GPU instance of groups, per
// p, and returns warnings for modes it could not honour and for entries
// of p that name no GPU of the node.
func Apply(groups []*structs.NodeDeviceResource, p Policy, h Host) []string {
	var warnings []string
	usedModels, usedGPUs := map[string]bool{}, map[string]bool{}
	for _, g := range groups {
		if g.Type != nvidia.Type {
			continue
		}
		for _, inst := range g.Instances {
			mode, key := p.configured(g, inst, usedModels, usedGPUs)
			mode, warn := honour(g, inst, mode, key, h)
			if warn != "" {
				warnings = append(warnings, warn)
			}
			if inst.Attributes == nil {
				inst.Attributes = map[string]string{}
			}
			inst.Attributes[structs.DeviceAttrSharing] = mode
		}
	}
	for _, m := range slices.Sorted(maps.Keys(p.Models)) {
		if !usedModels[m] {
			warnings = append(warnings, fmt.Sprintf("gpu_sharing: model %q matches no GPU on this node", m))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(p.GPUs)) {
		if !usedGPUs[id] {
			warnings = append(warnings, fmt.Sprintf("gpu_sharing: gpu %q matches no GPU on this node", id))
		}
	}
	return warnings
}

// configured returns the mode p gives inst ("" when none) and what said
// so, for warnings ("gpu GPU-...", "model ...", "mode"), marking the
// entry used.
func (p Policy) configured(g *structs.NodeDeviceResource, inst *structs.NodeDevice, usedModels, usedGPUs map[string]bool) (mode, key string) {
	for _, id := range []string{inst.ID, inst.Attributes[nvidia.DeviceAttrMIGParent]} {
		if m, ok := p.GPUs[id]; ok && id != "" {
			usedGPUs[id] = true
			return m, fmt.Sprintf("gpu %q", id)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Models)) { // two names may match: be deterministic
		if modelMatches(g, name) {
			usedModels[name] = true
			return p.Models[name], fmt.Sprintf("model %q", name)
		}
	}
	return p.Mode, "mode"
}

// modelMatches reports whether a model name names the group's model, or
// for a MIG group ("<model> MIG 1g.10gb") its parent's.
func modelMatches(g *structs.NodeDeviceResource, name string) bool {
	model := g.Name
	if i := strings.Index(model, " MIG "); i > 0 && isMIG(g.Instances...) {
		model = model[:i]
	}
	for _, n := range []string{g.Name, model} {
		if strings.EqualFold(n, name) {
			return true
		}
		if first, rest, ok := strings.Cut(n, " "); ok && strings.EqualFold(first, g.Vendor) && strings.EqualFold(rest, name) {
			return true
		}
	}
	return false
}

// honour returns the mode inst gets for the configured one ("" for the
// default), and a warning when it differs from what was configured.
func honour(g *structs.NodeDeviceResource, inst *structs.NodeDevice, mode, key string, h Host) (string, string) {
	simulated := Simulated(g)
	switch {
	case isMIG(inst):
		if mode == "" || mode == structs.SharingMIG || mode == structs.SharingExclusive {
			return defaultTo(mode, structs.SharingMIG), ""
		}
		return structs.SharingMIG, fmt.Sprintf("gpu_sharing: %s: mode %s does not apply to MIG instance %s; sharing it as mig", key, mode, inst.ID)
	case mode == "" && simulated:
		return structs.SharingTimeSlicing, ""
	case mode == "":
		return structs.SharingExclusive, ""
	case mode == structs.SharingMIG:
		return structs.SharingExclusive, fmt.Sprintf("gpu_sharing: %s: GPU %s is not in MIG mode (enable MIG and create instances with nvidia-smi); sharing it exclusive", key, inst.ID)
	case mode == structs.SharingMPS && !simulated && !h.MPS:
		return structs.SharingExclusive, fmt.Sprintf("gpu_sharing: %s: mps needs nvidia-cuda-mps-control, which was not found; sharing GPU %s exclusive", key, inst.ID)
	}
	return mode, ""
}

func defaultTo(mode, def string) string {
	if mode == "" {
		return def
	}
	return mode
}

// isMIG reports whether the instances are MIG instances.
func isMIG(insts ...*structs.NodeDevice) bool {
	return len(insts) > 0 && insts[0].Attributes[structs.DeviceAttrMIGProfile] != ""
}

// Simulated reports whether a GPU group is simulated.
func Simulated(g *structs.NodeDeviceResource) bool {
	return g.Attributes[structs.DeviceAttrSimulated] == "true"
}
