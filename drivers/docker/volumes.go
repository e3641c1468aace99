package docker

import (
	"fmt"
	"path"

	"github.com/moby/moby/api/types/mount"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// hostVolumeMounts turns the task's host volume mounts into bind
// mounts. The client's operator offered these paths as host volumes, so
// they need no "volumes { enabled = true }" (as in Nomad). The
// destination is a path in the container and must be absolute (the
// container does not see the task dir).
func hostVolumeMounts(mounts []*drivers.MountConfig) ([]mount.Mount, error) {
	var out []mount.Mount
	for _, m := range mounts {
		if m == nil {
			continue
		}
		if !path.IsAbs(m.TaskPath) {
			return nil, fmt.Errorf("%w: volume_mount destination %q: the docker driver needs an absolute path in the container", drivers.ErrInvalidConfig, m.TaskPath)
		}
		bm := mount.Mount{Type: mount.TypeBind, Source: m.HostPath, Target: path.Clean(m.TaskPath), ReadOnly: m.Readonly}
		switch m.PropagationMode {
		case structs.VolumeMountPropagationHostToTask:
			bm.BindOptions = &mount.BindOptions{Propagation: mount.PropagationRSlave}
		case structs.VolumeMountPropagationBidirectional:
			bm.BindOptions = &mount.BindOptions{Propagation: mount.PropagationRShared}
		default:
			bm.BindOptions = &mount.BindOptions{Propagation: mount.PropagationRPrivate}
		}
		out = append(out, bm)
	}
	return out, nil
}
