package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
// dirs (a volume may lie under the task dir). This runs before the
// pivot, where an absolute symlink reads as the host's path: a symlink a
// previous attempt of the task left in its task dir must not make the
// client create dirs, files or mounts out of the task's root.
func bindVolumes(root string, vols []volumeBind) error {
	for _, v := range vols {
		if err := checkNoLinks(root, v.Dst); err != nil {
			return fmt.Errorf("volume at %s: %w", v.Dst, err)
		}
		if err := bindInto(root, v.Src, v.Dst, v.ReadOnly); err != nil {
			return fmt.Errorf("volume at %s: %w", v.Dst, err)
		}
	}
	return nil
}

// checkNoLinks fails when an existing element of dst (a path inside
// root) is a symlink.
func checkNoLinks(root, dst string) error {
	p := root
	for _, e := range strings.Split(filepath.Clean("/"+dst), "/") {
		if e == "" {
			continue
		}
		p = filepath.Join(p, e)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: volume_mount destination %q: %s is a symlink", drivers.ErrInvalidConfig, dst, strings.TrimPrefix(p, root))
		}
	}
	return nil
}
