package structs

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Volume types. Only host volumes are supported: Drover has no CSI
// integration.
const (
	VolumeTypeHost = "host"
	VolumeTypeCSI  = "csi"
)

// Volume mount propagation modes (Nomad's).
const (
	VolumeMountPropagationPrivate       = "private"
	VolumeMountPropagationHostToTask    = "host-to-task"
	VolumeMountPropagationBidirectional = "bidirectional"
)

// Bounds on volumes, so that no job can make a node's mount table grow
// without limit.
const (
	MaxGroupVolumes = 64
	MaxVolumeMounts = 64
	maxVolumePath   = 4096
)

// ClientHostVolumeConfig is a host volume a client offers (agent config
// client { host_volume "name" { path read_only } }), as it appears in
// Node.HostVolumes.
type ClientHostVolumeConfig struct {
	Name     string
	Path     string
	ReadOnly bool
}

// VolumeRequest is a group's volume block: a host volume the group's
// allocations need on their node (Nomad's VolumeRequest).
type VolumeRequest struct {
	Name           string
	Type           string
	Source         string
	ReadOnly       bool
	Sticky         bool   `json:",omitempty"`
	AccessMode     string `json:",omitempty"`
	AttachmentMode string `json:",omitempty"`
	PerAlloc       bool   `json:",omitempty"`
}

// VolumeMount mounts one of the group's volumes into a task at
// Destination (Nomad's VolumeMount).
type VolumeMount struct {
	Volume          string
	Destination     string
	ReadOnly        bool
	PropagationMode string
	SELinuxLabel    string `json:",omitempty"`
}

// copyVolumes deep-copies a group's volume requests.
func copyVolumes(in map[string]*VolumeRequest) map[string]*VolumeRequest {
	if in == nil {
		return nil
	}
	out := maps.Clone(in)
	for k, v := range out {
		if v != nil {
			c := *v
			out[k] = &c
		}
	}
	return out
}

// copyVolumeMounts deep-copies a task's volume mounts.
func copyVolumeMounts(in []*VolumeMount) []*VolumeMount {
	if in == nil {
		return nil
	}
	out := make([]*VolumeMount, len(in))
	for i, m := range in {
		if m != nil {
			c := *m
			out[i] = &c
		}
	}
	return out
}

// Validate checks a volume request named name in its group.
func (v *VolumeRequest) Validate(name string) error {
	if v == nil {
		return fmt.Errorf("volume %q: empty", name)
	}
	switch v.Type {
	case VolumeTypeHost:
	case VolumeTypeCSI:
		return fmt.Errorf("volume %q: type %q: Drover has no CSI integration", name, v.Type)
	case "":
		return fmt.Errorf("volume %q: missing type (host)", name)
	default:
		return fmt.Errorf("volume %q: type %q is not supported (host is)", name, v.Type)
	}
	var errs []error
	if v.Name != "" && v.Name != name {
		errs = append(errs, fmt.Errorf("volume %q: name %q differs from its key", name, v.Name))
	}
	if v.Source == "" {
		errs = append(errs, fmt.Errorf("volume %q: missing source (the name of a client's host_volume)", name))
	} else if len(v.Source) > 128 || strings.ContainsAny(v.Source, "\x00/") {
		errs = append(errs, fmt.Errorf("volume %q: source %q is not a host volume name", name, v.Source))
	}
	if v.PerAlloc {
		errs = append(errs, fmt.Errorf("volume %q: per_alloc is for CSI volumes", name))
	}
	if v.Sticky {
		errs = append(errs, fmt.Errorf("volume %q: sticky is for dynamic host volumes, which Drover does not have", name))
	}
	if v.AccessMode != "" || v.AttachmentMode != "" {
		errs = append(errs, fmt.Errorf("volume %q: access_mode and attachment_mode are for CSI volumes", name))
	}
	return errors.Join(errs...)
}

// Validate checks a task's volume mount against its group's volumes.
func (m *VolumeMount) Validate(volumes map[string]*VolumeRequest) error {
	if m == nil {
		return errors.New("volume_mount: empty")
	}
	var errs []error
	if m.Volume == "" {
		errs = append(errs, errors.New("volume_mount: missing volume"))
	} else if volumes[m.Volume] == nil {
		errs = append(errs, fmt.Errorf("volume_mount: the group has no volume %q", m.Volume))
	}
	switch {
	case m.Destination == "":
		errs = append(errs, fmt.Errorf("volume_mount %q: missing destination", m.Volume))
	case len(m.Destination) > maxVolumePath || strings.ContainsRune(m.Destination, 0):
		errs = append(errs, fmt.Errorf("volume_mount %q: destination is not a path", m.Volume))
	case strings.HasPrefix(filepath.Clean("/"+m.Destination), "/..") || hasDotDot(m.Destination):
		errs = append(errs, fmt.Errorf("volume_mount %q: destination %q must not contain \"..\"", m.Volume, m.Destination))
	}
	switch m.PropagationMode {
	case "", VolumeMountPropagationPrivate, VolumeMountPropagationHostToTask, VolumeMountPropagationBidirectional:
	default:
		errs = append(errs, fmt.Errorf("volume_mount %q: propagation_mode %q is not one of private, host-to-task, bidirectional", m.Volume, m.PropagationMode))
	}
	if m.SELinuxLabel != "" {
		errs = append(errs, fmt.Errorf("volume_mount %q: selinux_label is not supported", m.Volume))
	}
	return errors.Join(errs...)
}

func hasDotDot(p string) bool {
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return true
		}
	}
	return false
}

// MountReadOnly reports whether a mount of the volume is read-only: when
// the mount or the volume request says so.
func (m *VolumeMount) MountReadOnly(v *VolumeRequest) bool {
	return m.ReadOnly || (v != nil && v.ReadOnly)
}

// validateVolumes checks a group's volumes and its tasks' mounts.
func (tg *TaskGroup) validateVolumes() error {
	var errs []error
	if len(tg.Volumes) > MaxGroupVolumes {
		errs = append(errs, fmt.Errorf("%d volumes: at most %d", len(tg.Volumes), MaxGroupVolumes))
	}
	for _, name := range slices.Sorted(maps.Keys(tg.Volumes)) {
		if err := tg.Volumes[name].Validate(name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		if len(t.VolumeMounts) > MaxVolumeMounts {
			errs = append(errs, fmt.Errorf("task %q: %d volume mounts: at most %d", t.Name, len(t.VolumeMounts), MaxVolumeMounts))
			continue
		}
		for _, m := range t.VolumeMounts {
			if err := m.Validate(tg.Volumes); err != nil {
				errs = append(errs, fmt.Errorf("task %q: %w", t.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// HostVolumeNeeds returns, per host volume (source) name, whether the
// group needs to write to it. Only host volumes count.
func (tg *TaskGroup) HostVolumeNeeds() map[string]bool {
	if len(tg.Volumes) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, v := range tg.Volumes {
		if v == nil || v.Type != VolumeTypeHost {
			continue
		}
		out[v.Source] = out[v.Source] || !v.ReadOnly
	}
	return out
}

// copyHostVolumes deep-copies a node's host volumes.
func copyHostVolumes(in map[string]*ClientHostVolumeConfig) map[string]*ClientHostVolumeConfig {
	if in == nil {
		return nil
	}
	out := maps.Clone(in)
	for k, v := range out {
		if v != nil {
			c := *v
			out[k] = &c
		}
	}
	return out
}
