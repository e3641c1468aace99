package sim

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/droverhq/drover/structs"
)

// Datacenter is where every simulated node sits and every job may run.
const Datacenter = "dc1"

// Synthetic cluster defaults: an HGX H100 class machine.
const (
	SyntheticModel     = "H100"
	SyntheticGPUMemGiB = 80
	SyntheticCPUMilli  = 128000
	SyntheticMemoryMiB = 1 << 20 // 1 TiB
)

// gpuMemoryGiB is the memory of each GPU model in the trace. The trace
// does not disclose what G1, G2 and G3 are; 32 GiB is a guess that only
// matters to jobs that constrain ${device.attr.memory}, which trace pods
// never do. Models not listed here get the same guess.
var gpuMemoryGiB = map[string]int{
	"V100M16":      16,
	"V100M32":      32,
	"P100":         16,
	"T4":           16,
	"A10":          24,
	"G1":           32,
	"G2":           32,
	"G3":           32,
	SyntheticModel: SyntheticGPUMemGiB,
}

const unknownGPUMemGiB = 32

// nodeUUIDSpace namespaces the name-based (SHA-1) IDs of simulated nodes.
var nodeUUIDSpace = uuid.MustParse("4b7c2f1e-5d0a-4c1b-8e43-73696d6e6f64")

// NodeID returns the deterministic ID of the simulated node called name.
func NodeID(name string) string {
	return uuid.NewSHA1(nodeUUIDSpace, []byte("node/"+name)).String()
}

// GPUID returns the ID of GPU i of node name: "GPU-<name>-<i>", with i
// zero-padded so that one node's IDs sort in index order.
func GPUID(name string, i int) string { return fmt.Sprintf("GPU-%s-%02d", name, i) }

// Node returns the structs.Node for spec: ready, eligible, in Datacenter,
// with the raw_exec driver, CpuShares = CPUMilli, MemoryMB = MemoryMiB and,
// when it has GPUs, one healthy simulated "nvidia/gpu/<model>" group.
// Instances have no links: the trace says nothing of topology.
func Node(spec NodeSpec) *structs.Node {
	cores := spec.CPUMilli / 1000
	n := &structs.Node{
		ID:         NodeID(spec.Name),
		SecretID:   uuid.NewSHA1(nodeUUIDSpace, []byte("secret/"+spec.Name)).String(),
		Datacenter: Datacenter,
		Name:       spec.Name,
		Attributes: map[string]string{
			"kernel.name":     "linux",
			"cpu.arch":        "amd64",
			"cpu.numcores":    fmt.Sprint(cores),
			"unique.hostname": spec.Name,
			"driver.raw_exec": "1",
		},
		Meta: map[string]string{},
		Drivers: map[string]*structs.DriverInfo{
			"raw_exec": {Detected: true, Healthy: true, HealthDescription: "Healthy"},
		},
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: spec.CPUMilli, TotalCpuCores: uint16(min(cores, 1<<16-1))},
			Memory: structs.NodeMemoryResources{MemoryMB: spec.MemoryMiB},
		},
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
	}
	if spec.GPUs > 0 {
		n.NodeResources.Devices = []*structs.NodeDeviceResource{gpuGroup(spec)}
	}
	return n
}

func gpuGroup(spec NodeSpec) *structs.NodeDeviceResource {
	mem, ok := gpuMemoryGiB[spec.Model]
	if !ok {
		mem = unknownGPUMemGiB
	}
	g := &structs.NodeDeviceResource{
		Vendor: "nvidia",
		Type:   "gpu",
		Name:   spec.Model,
		Attributes: map[string]string{
			structs.DeviceAttrMemory:    fmt.Sprintf("%d GiB", mem),
			structs.DeviceAttrSimulated: "true",
		},
	}
	for i := range spec.GPUs {
		bus := fmt.Sprintf("0000:%02x:00.0", 0x10+i)
		g.Instances = append(g.Instances, &structs.NodeDevice{
			ID:                GPUID(spec.Name, i),
			Healthy:           true,
			HealthDescription: "simulated",
			Locality:          &structs.NodeDeviceLocality{PciBusID: bus},
			Attributes:        map[string]string{structs.DeviceAttrPCIBusID: bus},
		})
	}
	return g
}

// SyntheticNodes returns n node specs of gpus SyntheticModel GPUs each,
// named "sim-node-00000" on.
func SyntheticNodes(n, gpus int) []NodeSpec {
	out := make([]NodeSpec, n)
	for i := range out {
		out[i] = NodeSpec{
			Name:      fmt.Sprintf("sim-node-%05d", i),
			CPUMilli:  SyntheticCPUMilli,
			MemoryMiB: SyntheticMemoryMiB,
			GPUs:      gpus,
			Model:     SyntheticModel,
		}
	}
	return out
}

// Synthetic task shape: one whole GPU with a little CPU and memory.
const (
	SyntheticTaskCPUMilli  = 4000
	SyntheticTaskMemoryMiB = 16384
)

// SyntheticJobSize is how many synthetic tasks `drover sim` submits as
// one batch job unless told otherwise: the shape of a training sweep, and
// the 2,000-allocation batch job of the scheduler issue's comparison with
// Nomad.
const SyntheticJobSize = 2000

// SyntheticPods returns n single-GPU pods (SyntheticTaskCPUMilli,
// SyntheticTaskMemoryMiB, one whole GPU), named "sim-pod-000000" on.
func SyntheticPods(n int) []PodSpec {
	out := make([]PodSpec, n)
	for i := range out {
		out[i] = PodSpec{
			Name:      fmt.Sprintf("sim-pod-%06d", i),
			CPUMilli:  SyntheticTaskCPUMilli,
			MemoryMiB: SyntheticTaskMemoryMiB,
			NumGPU:    1,
			GPUMilli:  wholeMilli,
		}
	}
	return out
}

// ClusterGPUs sums the GPUs of nodes.
func ClusterGPUs(nodes []NodeSpec) int {
	total := 0
	for _, n := range nodes {
		total += n.GPUs
	}
	return total
}
