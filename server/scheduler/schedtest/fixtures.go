package schedtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/google/uuid"

	"github.com/droverhq/drover/structs"
)

// Fixture defaults.
const (
	Datacenter  = "dc1"
	H100        = "NVIDIA H100 80GB HBM3"
	NodeCPU     = 64000  // MHz: 32 cores at 2 GHz
	NodeMemMB   = 262144 // 256 GiB
	TaskCPU     = 1000
	TaskMemMB   = 1024
	GPUGroup    = "train"
	ServiceTask = "web"
)

// NodeID returns the deterministic ID of the fixture node called name.
func NodeID(name string) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("drover-node/"+name)).String()
}

// GPUID returns the deterministic UUID of GPU idx of model on node name.
// IDs of one node sort in index order.
func GPUID(name, model string, idx int) string {
	sum := sha1.Sum([]byte(name + "/" + model))
	return fmt.Sprintf("GPU-%s-0000-4000-8000-%012x", hex.EncodeToString(sum[:4]), idx)
}

// Node returns a ready, eligible node in Datacenter with the raw_exec
// driver, NodeCPU MHz and NodeMemMB of memory, and gpus healthy simulated
// GPUs of model (H100 when ""), each with memGiB of GPU memory.
//
// GPU i sits on NUMA node i*2/gpus. GPUs 0-1, 2-3, ... are NVLink pairs;
// other GPUs on the same NUMA node share a PCIe switch; the rest reach
// each other through the system.
func Node(name string, gpus int, model string, memGiB int) *structs.Node {
	if model == "" {
		model = H100
	}
	n := &structs.Node{
		ID:         NodeID(name),
		SecretID:   uuid.NewSHA1(uuid.NameSpaceOID, []byte("drover-secret/"+name)).String(),
		Datacenter: Datacenter,
		Name:       name,
		HTTPAddr:   "127.0.0.1:4646",
		Attributes: map[string]string{
			"kernel.name":     "linux",
			"cpu.arch":        "amd64",
			"cpu.numcores":    "32",
			"unique.hostname": name,
			"driver.raw_exec": "1",
		},
		Meta: map[string]string{},
		Drivers: map[string]*structs.DriverInfo{
			"raw_exec": {Detected: true, Healthy: true, HealthDescription: "Healthy"},
		},
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: NodeCPU, TotalCpuCores: 32},
			Memory: structs.NodeMemoryResources{MemoryMB: NodeMemMB},
		},
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
	}
	if gpus > 0 {
		n.NodeResources.Devices = []*structs.NodeDeviceResource{gpuGroup(name, gpus, model, memGiB)}
	}
	return n
}

func gpuGroup(name string, gpus int, model string, memGiB int) *structs.NodeDeviceResource {
	g := &structs.NodeDeviceResource{
		Vendor: "nvidia",
		Type:   "gpu",
		Name:   model,
		Attributes: map[string]string{
			structs.DeviceAttrMemory:            fmt.Sprintf("%d GiB", memGiB),
			structs.DeviceAttrComputeCapability: "9.0",
			structs.DeviceAttrArchitecture:      "hopper",
			structs.DeviceAttrDriverVersion:     "550.54.15",
			structs.DeviceAttrCUDAVersion:       "12.4",
			structs.DeviceAttrPower:             "700 W",
			structs.DeviceAttrSimulated:         "true",
		},
	}
	numa := func(i int) int { return i * 2 / gpus }
	for i := range gpus {
		bus := fmt.Sprintf("0000:%02x:00.0", 0x10+i)
		inst := &structs.NodeDevice{
			ID:                GPUID(name, model, i),
			Healthy:           true,
			HealthDescription: "healthy",
			Locality:          &structs.NodeDeviceLocality{PciBusID: bus},
			Attributes: map[string]string{
				structs.DeviceAttrPCIBusID: bus,
				structs.DeviceAttrNUMANode: fmt.Sprint(numa(i)),
			},
			Links: map[string]string{},
		}
		for j := range gpus {
			switch {
			case j == i:
				continue
			case j == i^1:
				inst.Links[GPUID(name, model, j)] = structs.LinkNVLink
			case numa(j) == numa(i):
				inst.Links[GPUID(name, model, j)] = structs.LinkPCIeSwitch
			default:
				inst.Links[GPUID(name, model, j)] = structs.LinkSystem
			}
		}
		g.Instances = append(g.Instances, inst)
	}
	return g
}

// GPUJob returns a canonicalized batch job in Datacenter with one group
// (GPUGroup) of count allocations, each one raw_exec task using TaskCPU,
// TaskMemMB and gpusPerTask "nvidia/gpu" devices (none when 0).
func GPUJob(id string, count int, gpusPerTask uint64) *structs.Job {
	res := &structs.Resources{CPU: TaskCPU, MemoryMB: TaskMemMB}
	if gpusPerTask > 0 {
		res.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: gpusPerTask}}
	}
	job := &structs.Job{
		ID:          id,
		Type:        structs.JobTypeBatch,
		Datacenters: []string{Datacenter},
		TaskGroups: []*structs.TaskGroup{{
			Name:  GPUGroup,
			Count: count,
			Tasks: []*structs.Task{{
				Name:      GPUGroup,
				Driver:    "raw_exec",
				Config:    map[string]any{"command": "/bin/true"},
				Resources: res,
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// ServiceJob returns a canonicalized service job in Datacenter with one
// group (ServiceTask) of count allocations of one raw_exec task without
// devices.
func ServiceJob(id string, count int) *structs.Job {
	job := &structs.Job{
		ID:          id,
		Type:        structs.JobTypeService,
		Datacenters: []string{Datacenter},
		TaskGroups: []*structs.TaskGroup{{
			Name:  ServiceTask,
			Count: count,
			Tasks: []*structs.Task{{
				Name:      ServiceTask,
				Driver:    "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"3600"}},
				Resources: &structs.Resources{CPU: TaskCPU, MemoryMB: TaskMemMB},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// Eval returns a pending evaluation of job with a random ID.
func Eval(job *structs.Job, trigger string) *structs.Evaluation {
	return &structs.Evaluation{
		ID:             structs.GenerateUUID(),
		Namespace:      job.Namespace,
		Priority:       job.Priority,
		Type:           job.Type,
		TriggeredBy:    trigger,
		JobID:          job.ID,
		JobModifyIndex: job.JobModifyIndex,
		Status:         structs.EvalStatusPending,
	}
}

// InNetwork places n in the network: topology.<level> = value for each
// level, value pair (structs.TopologyAttrPrefix), as a client's
// topology block reports it. It returns n.
func InNetwork(n *structs.Node, levelValues ...string) *structs.Node {
	for i := 0; i+1 < len(levelValues); i += 2 {
		n.Attributes[structs.TopologyAttrPrefix+levelValues[i]] = levelValues[i+1]
	}
	return n
}
