package nvidia

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/droverhq/drover/structs"
)

// DeviceAttrMIGParent is the per-instance attribute naming the physical
// GPU (its UUID) a MIG instance is carved from.
const DeviceAttrMIGParent = "mig_parent"

// migDevice is one MIG GPU instance as read from NVML.
type migDevice struct {
	uuid    string
	profile string // "1g.5gb"
	memMB   uint64
	compute int // percent of the parent GPU's compute slices
}

// migEnabled reports whether MIG mode is on (currently active) for dev.
func migEnabled(dev nvml.Device) bool {
	type modes struct{ current, pending int }
	m, ret := call(func() (modes, nvml.Return) {
		cur, pend, ret := dev.GetMigMode()
		return modes{cur, pend}, ret
	})
	return ret == nvml.SUCCESS && m.current == nvml.DEVICE_MIG_ENABLE
}

// readMIG lists the GPU instances of a MIG-enabled GPU, one device per
// GPU instance (the usual one compute instance spanning it), in profile
// order. A MIG device's UUID comes from NVML's MIG device handles when
// the driver offers them; otherwise it is the legacy identifier
// "MIG-<parent UUID>/<gpu instance>/0", which CUDA also accepts.
func readMIG(dev nvml.Device, parentUUID string) []migDevice {
	uuids := migUUIDs(dev)
	out := []migDevice{} // non-nil: the GPU is in MIG mode even with no instances
	var infos []nvml.GpuInstanceProfileInfo
	var gpuSlices uint32 // the GPU's compute slices: its largest profile's
	for p := 0; p < nvml.GPU_INSTANCE_PROFILE_COUNT; p++ {
		info, ret := call(func() (nvml.GpuInstanceProfileInfo, nvml.Return) { return dev.GetGpuInstanceProfileInfo(p) })
		if ret == nvml.SUCCESS {
			infos = append(infos, info)
			gpuSlices = max(gpuSlices, info.SliceCount)
		}
	}
	for _, info := range infos {
		gis, ret := call(func() ([]nvml.GpuInstance, nvml.Return) { return dev.GetGpuInstances(&info) })
		if ret != nvml.SUCCESS {
			continue
		}
		var ids []int
		for _, gi := range gis {
			if gii, ret := call(gi.GetInfo); ret == nvml.SUCCESS {
				ids = append(ids, int(gii.Id))
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			uuid := uuids[id]
			if uuid == "" {
				uuid = fmt.Sprintf("MIG-%s/%d/0", parentUUID, id)
			}
			out = append(out, migDevice{uuid: uuid, profile: ProfileName(info), memMB: info.MemorySizeMB, compute: migCompute(info.SliceCount, gpuSlices)})
		}
	}
	return out
}

// migCompute is a profile's share of its GPU's compute slices in percent
// (3 of 7 -> 42, 1 of 4 -> 25).
func migCompute(profileSlices, gpuSlices uint32) int {
	if gpuSlices == 0 {
		return 0
	}
	return int(profileSlices * 100 / gpuSlices)
}

// migUUIDs maps GPU instance IDs to MIG device UUIDs through NVML's MIG
// device handles, where the driver (or mock) offers them.
func migUUIDs(dev nvml.Device) map[int]string {
	out := map[int]string{}
	n, ret := call(dev.GetMaxMigDeviceCount)
	if ret != nvml.SUCCESS {
		return out
	}
	for i := 0; i < n; i++ {
		mig, ret := call(func() (nvml.Device, nvml.Return) { return dev.GetMigDeviceHandleByIndex(i) })
		if ret != nvml.SUCCESS || mig == nil {
			continue
		}
		uuid, ret := call(mig.GetUUID)
		if ret != nvml.SUCCESS || uuid == "" {
			continue
		}
		gi, ret := call(mig.GetGpuInstanceId)
		if ret != nvml.SUCCESS {
			continue
		}
		if _, dup := out[gi]; !dup {
			out[gi] = uuid
		}
	}
	return out
}

// ProfileName renders a GPU instance profile the way nvidia-smi names
// it: slices and memory rounded up to whole GB ("1g.5gb", "7g.40gb").
func ProfileName(info nvml.GpuInstanceProfileInfo) string {
	gb := (info.MemorySizeMB + 1023) / 1024
	return strconv.FormatUint(uint64(info.SliceCount), 10) + "g." + strconv.FormatUint(gb, 10) + "gb"
}

// migGroups turns the MIG devices of the GPUs into device groups, one per
// (model, profile), named "<model> MIG <profile>" and carrying the
// parent's attributes with the instance's memory and mig_profile.
func migGroups(gpus []*gpu) []*structs.NodeDeviceResource {
	var out []*structs.NodeDeviceResource
	byName := map[string]*structs.NodeDeviceResource{}
	for _, g := range gpus {
		for _, m := range g.mig {
			name := g.model + " MIG " + m.profile
			res := byName[name]
			if res == nil {
				attrs := map[string]string{}
				for k, v := range g.groupKV {
					attrs[k] = v
				}
				attrs[structs.DeviceAttrMemory] = structs.FormatBytes(m.memMB << 20)
				attrs[structs.DeviceAttrMIGProfile] = m.profile
				res = &structs.NodeDeviceResource{Vendor: Vendor, Type: Type, Name: name, Attributes: attrs}
				byName[name] = res
				out = append(out, res)
			}
			inst := &structs.NodeDevice{
				ID:                m.uuid,
				Healthy:           g.instance.Healthy,
				HealthDescription: g.instance.HealthDescription,
				Attributes: map[string]string{
					structs.DeviceAttrMIGProfile: m.profile,
					DeviceAttrMIGParent:          g.uuid,
				},
			}
			if m.compute > 0 {
				inst.Attributes[structs.DeviceAttrMIGCompute] = strconv.Itoa(m.compute)
			}
			for _, k := range []string{structs.DeviceAttrPCIBusID, structs.DeviceAttrNUMANode} {
				if v, ok := g.instance.Attributes[k]; ok {
					inst.Attributes[k] = v
				}
			}
			if g.instance.Locality != nil {
				l := *g.instance.Locality
				inst.Locality = &l
			}
			res.Instances = append(res.Instances, inst)
		}
	}
	return out
}
