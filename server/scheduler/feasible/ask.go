package feasible

import (
	"github.com/droverhq/drover/structs"
)

// ask is what one allocation of a task group needs, summed over its
// tasks, with its device requests flattened in task order.
type ask struct {
	job     *structs.Job
	group   *structs.TaskGroup
	cpu     int64
	memMB   int64
	diskMB  int64 // the group's ephemeral disk
	devices []deviceAsk
	gpus    int // instances asked of devices of type "gpu"
	// sliceGPUs of them are slices; sliceCompute is the largest compute
	// share (percent, at least 1) a slice asks.
	sliceGPUs, sliceCompute int
}

// deviceAsk is one task's request for devices, with its name parsed.
type deviceAsk struct {
	task               string
	req                *structs.RequestedDevice
	vendor, typ, model string
}

func newAsk(job *structs.Job, tg *structs.TaskGroup) *ask {
	a := &ask{job: job, group: tg, diskMB: int64(tg.DiskMB())}
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		a.cpu += int64(t.Resources.CPU)
		a.memMB += int64(t.Resources.MemoryMB)
		for _, d := range t.Resources.Devices {
			vendor, typ, model, err := structs.ParseDeviceName(d.Name)
			if err != nil {
				// Validation rejects such a job; keep the name so the
				// node filter reports it as not available.
				typ = d.Name
			}
			a.devices = append(a.devices, deviceAsk{task: t.Name, req: d, vendor: vendor, typ: typ, model: model})
			if typ == "gpu" {
				a.gpus += int(d.Count)
				if isSlice(d) {
					a.sliceGPUs += int(d.Count)
					a.sliceCompute = max(a.sliceCompute, d.Compute, 1)
				}
			}
		}
	}
	return a
}

// resources returns what an allocation of the ask holds on a node, with
// the device instances chosen there.
func (a *ask) resources(devices map[string][]*structs.AllocatedDeviceResource) *structs.AllocatedResources {
	res := &structs.AllocatedResources{Tasks: make(map[string]*structs.AllocatedTaskResources, len(a.group.Tasks))}
	for _, t := range a.group.Tasks {
		tr := &structs.AllocatedTaskResources{Devices: devices[t.Name]}
		if t.Resources != nil {
			tr.Cpu.CpuShares = int64(t.Resources.CPU)
			tr.Memory.MemoryMB = int64(t.Resources.MemoryMB)
			tr.Memory.MemoryMaxMB = int64(t.Resources.MemoryMaxMB)
		}
		res.Tasks[t.Name] = tr
	}
	res.Shared.DiskMB = a.diskMB
	return res
}

// constraints returns the job's, the group's and its tasks' constraints.
func (a *ask) constraints() []*structs.Constraint {
	out := append([]*structs.Constraint(nil), a.job.Constraints...)
	out = append(out, a.group.Constraints...)
	for _, t := range a.group.Tasks {
		out = append(out, t.Constraints...)
	}
	return out
}

// affinities returns the job's, the group's and its tasks' affinities.
func (a *ask) affinities() []*structs.Affinity {
	out := append([]*structs.Affinity(nil), a.job.Affinities...)
	out = append(out, a.group.Affinities...)
	for _, t := range a.group.Tasks {
		out = append(out, t.Affinities...)
	}
	return out
}

// drivers returns the distinct drivers of the group's tasks, in task order.
func (a *ask) drivers() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range a.group.Tasks {
		if !seen[t.Driver] {
			seen[t.Driver] = true
			out = append(out, t.Driver)
		}
	}
	return out
}

// isSlice reports whether d asks for a share of each instance rather than
// whole ones.
func isSlice(d *structs.RequestedDevice) bool { return d.Compute > 0 || d.MemoryMB > 0 }

// gpuShare is how many GPUs the ask takes, slices counted by compute.
func (a *ask) gpuShare() float64 {
	return float64(a.gpus-a.sliceGPUs) + float64(a.sliceGPUs*a.sliceCompute)/structs.WholeGPU
}

// firstGPU is the ask's first request for GPUs (zero when none).
func (a *ask) firstGPU() deviceAsk {
	for _, d := range a.devices {
		if d.typ == "gpu" {
			return d
		}
	}
	return deviceAsk{req: &structs.RequestedDevice{Name: "gpu"}}
}
