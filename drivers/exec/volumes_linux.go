package exec

import (
	"fmt"
	"path/filepath"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// volumeBind is a host volume bound into the task's root: host path Src
// at Dst inside.
type volumeBind struct {
	Src, Dst string
	ReadOnly bool
}

// volumeBinds turns the task's mounts into binds: an absolute
// destination is that path in the task's root; a relative one lies
// under the task dir (dir, the task dir as the task sees it). Only
// private propagation: the task's mounts are private to its namespace.
func volumeBinds(dir string, mounts []*drivers.MountConfig) ([]volumeBind, error) {
	var out []volumeBind
	for _, m := range mounts {
		if m == nil {
			continue
		}
		if p := m.PropagationMode; p != "" && p != structs.VolumeMountPropagationPrivate {
			return nil, fmt.Errorf("%w: volume_mount %q: propagation_mode %q is not supported by the exec driver (private is)", drivers.ErrInvalidConfig, m.TaskPath, p)
		}
		dst := filepath.Clean(m.TaskPath)
		if !filepath.IsAbs(dst) {
			var err error
			if dst, err = m.TaskDirPath(dir); err != nil {
				return nil, err
			}
		}
		src, err := filepath.EvalSymlinks(m.HostPath)
		if err != nil {
			return nil, fmt.Errorf("volume_mount %q: host volume: %w", m.TaskPath, err)
		}
		out = append(out, volumeBind{Src: src, Dst: dst, ReadOnly: m.Readonly})
	}
	return out, nil
}

// bindVolumes binds the volumes into root, after the task and alloc
// dirs (a volume may lie under the task dir).
func bindVolumes(root string, vols []volumeBind) error {
	for _, v := range vols {
		if err := bindInto(root, v.Src, v.Dst, v.ReadOnly); err != nil {
			return fmt.Errorf("volume at %s: %w", v.Dst, err)
		}
	}
	return nil
}
