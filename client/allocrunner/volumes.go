package allocrunner

import (
	"fmt"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

// resolveMounts finds, for every task, the host paths of the volumes its
// volume_mount blocks name, from the host volumes this client offers.
// The scheduler placed the allocation where they exist; a client whose
// config changed since is a setup failure, named.
func resolveMounts(tg *structs.TaskGroup, offered map[string]*structs.ClientHostVolumeConfig) (map[string][]*drivers.MountConfig, error) {
	out := map[string][]*drivers.MountConfig{}
	for _, t := range tg.Tasks {
		for _, m := range t.VolumeMounts {
			if m == nil {
				continue
			}
			req := tg.Volumes[m.Volume]
			if req == nil {
				return nil, fmt.Errorf("task %q: volume_mount: the group has no volume %q", t.Name, m.Volume)
			}
			if req.Type != structs.VolumeTypeHost {
				return nil, fmt.Errorf("task %q: volume %q: type %q is not supported", t.Name, m.Volume, req.Type)
			}
			hv := offered[req.Source]
			if hv == nil {
				return nil, fmt.Errorf("task %q: volume %q: this client has no host volume %q", t.Name, m.Volume, req.Source)
			}
			ro := m.MountReadOnly(req)
			if hv.ReadOnly && !ro {
				return nil, fmt.Errorf("task %q: volume %q: host volume %q is read-only on this client", t.Name, m.Volume, req.Source)
			}
			out[t.Name] = append(out[t.Name], &drivers.MountConfig{
				TaskPath: m.Destination, HostPath: hv.Path, Readonly: ro || hv.ReadOnly, PropagationMode: m.PropagationMode,
			})
		}
	}
	return out, nil
}
