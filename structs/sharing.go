package structs

import (
	"strconv"
	"strings"
)

// DeviceAttrSharing is the per-instance attribute saying how the node lets
// allocations share a GPU instance (${device.attr.sharing}): one of the
// Sharing* modes. The client sets it on every GPU instance from its
// gpu_sharing config.
const DeviceAttrSharing = "sharing"

// DeviceAttrMIGCompute is the per-instance attribute of a MIG instance
// holding its share of its parent GPU's compute, in percent ("42" for a
// 3g.40gb instance of a 7-slice A100).
const DeviceAttrMIGCompute = "mig_compute"

// GPU sharing modes.
const (
	// SharingExclusive: one allocation holds the whole instance; slice
	// requests are refused.
	SharingExclusive = "exclusive"
	// SharingMPS: slices run under NVIDIA MPS with their memory and
	// compute limits enforced.
	SharingMPS = "mps"
	// SharingMIG: the instance is a MIG instance; a slice request may take
	// it whole when it is big enough.
	SharingMIG = "mig"
	// SharingTimeSlicing: slices are accounted by the scheduler but not
	// enforced on the GPU.
	SharingTimeSlicing = "time-slicing"
)

// SharingModes lists the sharing modes in the order the docs give them.
var SharingModes = []string{SharingExclusive, SharingMPS, SharingMIG, SharingTimeSlicing}

// ValidSharingMode reports whether mode is one of SharingModes.
func ValidSharingMode(mode string) bool {
	for _, m := range SharingModes {
		if m == mode {
			return true
		}
	}
	return false
}

// SharingMode returns how the node shares inst, an instance of the group:
// its sharing attribute, else the group's, else "" (a node that does not
// say, such as one built by hand in a test; it is treated as sharing
// slices, accounted only).
func (d *NodeDeviceResource) SharingMode(inst *NodeDevice) string {
	if v, ok := inst.Attributes[DeviceAttrSharing]; ok {
		return v
	}
	return d.Attributes[DeviceAttrSharing]
}

// SharesSlices reports whether allocations may hold slices of an instance
// shared in mode: mps, time-slicing, or unsaid. Exclusive instances and
// MIG instances are held whole.
func SharesSlices(mode string) bool {
	return mode == SharingMPS || mode == SharingTimeSlicing || mode == ""
}

// MIGCompute returns a MIG instance's share of its parent GPU's compute in
// percent: its mig_compute attribute, else the profile's slice count over
// the 7 slices of an A100 or H100 ("3g.40gb" -> 42), else 0.
func MIGCompute(inst *NodeDevice, group *NodeDeviceResource) int {
	if v, err := strconv.Atoi(inst.Attributes[DeviceAttrMIGCompute]); err == nil && v > 0 {
		return min(v, WholeGPU)
	}
	profile, ok := inst.Attributes[DeviceAttrMIGProfile]
	if !ok {
		profile = group.Attributes[DeviceAttrMIGProfile]
	}
	g, _, ok := strings.Cut(profile, "g.")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(g)
	if err != nil || n <= 0 {
		return 0
	}
	return min(n*WholeGPU/7, WholeGPU)
}
