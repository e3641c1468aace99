// Package simulated makes GPUs that do not exist, from agent config, for
// dev mode, tests and the simulator. They look like NVIDIA GPUs to the
// scheduler and are clearly labelled: the group attribute "simulated" is
// "true" and every instance's HealthDescription is "simulated".
//
// Everything is deterministic from (node name, model, index), so an agent
// restarted with the same config reports the same GPU UUIDs, PCI bus IDs
// and topology.
//
// Topology model: each Config entry is a set of HGX-style boards of
// BoardSize GPUs, filled in order. GPUs on one board share an NVLink
// domain (all-to-all through NVSwitch, as on an HGX H100 8-GPU board), so
// every pair on a board is LinkNVLink. NUMA nodes hold GPUsPerNUMA
// consecutive GPUs across the whole node (an 8-GPU board spans two NUMA
// nodes). GPUs on different boards reach each other through the host
// bridge when they share a NUMA node, else across the system
// interconnect (LinkSystem).
//
// It does no I/O and never runs anything on a GPU.
package simulated

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/droverhq/drover/structs"
)

// Defaults for fields a Config leaves empty: an H100 SXM.
const (
	DefaultModel             = "NVIDIA H100 80GB HBM3"
	DefaultMemoryBytes       = 80 << 30
	DefaultComputeCapability = "9.0"
)

// Values the simulated GPUs report for the host's NVIDIA software.
const (
	DriverVersion = "550.54.15"
	CUDAVersion   = "12.4"
)

// Topology constants (see the package doc).
const (
	BoardSize   = 8
	GPUsPerNUMA = 4
)

// HealthDescription is every simulated instance's health description.
const HealthDescription = "simulated"

// uuidSpace namespaces the name-based (SHA-1) UUIDs of simulated GPUs.
var uuidSpace = uuid.MustParse("6f1d0e0a-3c55-4e0b-9a53-64726f766572")

// Config asks for Count GPUs of one model.
type Config struct {
	Count             int
	Model             string
	MemoryBytes       uint64
	ComputeCapability string
}

func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.MemoryBytes == 0 {
		c.MemoryBytes = DefaultMemoryBytes
	}
	if c.ComputeCapability == "" {
		c.ComputeCapability = DefaultComputeCapability
	}
	return c
}

// placed is one simulated GPU and where it sits.
type placed struct {
	inst  *structs.NodeDevice
	board string
	numa  int
}

// Devices returns the simulated device groups for the configs, one group
// per model in order of first appearance (configs naming the same model
// add to its group; the first one's memory and compute capability win).
// Configs with Count <= 0 add nothing.
func Devices(nodeName string, cfgs ...Config) []*structs.NodeDeviceResource {
	var groups []*structs.NodeDeviceResource
	byModel := map[string]*structs.NodeDeviceResource{}
	var all []placed
	for ci, c := range cfgs {
		if c.Count <= 0 {
			continue
		}
		c = c.withDefaults()
		g := byModel[c.Model]
		if g == nil {
			g = &structs.NodeDeviceResource{
				Vendor: "nvidia", Type: "gpu", Name: c.Model,
				Attributes: groupAttributes(c),
			}
			byModel[c.Model] = g
			groups = append(groups, g)
		}
		for i := 0; i < c.Count; i++ {
			global := len(all)
			p := placed{
				inst:  newInstance(nodeName, c.Model, len(g.Instances), global),
				board: fmt.Sprintf("%d/%d", ci, i/BoardSize),
				numa:  global / GPUsPerNUMA,
			}
			g.Instances = append(g.Instances, p.inst)
			all = append(all, p)
		}
	}
	link(all)
	return groups
}

func groupAttributes(c Config) map[string]string {
	attrs := map[string]string{
		structs.DeviceAttrMemory:            structs.FormatBytes(c.MemoryBytes),
		structs.DeviceAttrComputeCapability: c.ComputeCapability,
		structs.DeviceAttrDriverVersion:     DriverVersion,
		structs.DeviceAttrCUDAVersion:       CUDAVersion,
		structs.DeviceAttrSimulated:         "true",
	}
	if arch := Architecture(c.ComputeCapability); arch != "" {
		attrs[structs.DeviceAttrArchitecture] = arch
	}
	return attrs
}

// newInstance makes the modelIndex-th GPU of model, the global-th
// simulated GPU on the node.
func newInstance(nodeName, model string, modelIndex, global int) *structs.NodeDevice {
	name := nodeName + "\x00" + model + "\x00" + strconv.Itoa(modelIndex)
	bus := fmt.Sprintf("00000000:%02X:00.0", global+1)
	return &structs.NodeDevice{
		ID:                "GPU-" + uuid.NewSHA1(uuidSpace, []byte(name)).String(),
		Healthy:           true,
		HealthDescription: HealthDescription,
		Locality:          &structs.NodeDeviceLocality{PciBusID: bus},
		Attributes: map[string]string{
			structs.DeviceAttrPCIBusID: bus,
			structs.DeviceAttrNUMANode: strconv.Itoa(global / GPUsPerNUMA),
		},
		Links: map[string]string{},
	}
}

// link fills every instance's link matrix.
func link(all []placed) {
	for i, a := range all {
		for j, b := range all {
			if i == j {
				continue
			}
			switch {
			case a.board == b.board:
				a.inst.Links[b.inst.ID] = structs.LinkNVLink
			case a.numa == b.numa:
				a.inst.Links[b.inst.ID] = structs.LinkHostBridge
			default:
				a.inst.Links[b.inst.ID] = structs.LinkSystem
			}
		}
	}
}

// Architecture names the NVIDIA architecture of a CUDA compute
// capability ("9.0" -> "hopper"), or "" when unknown.
func Architecture(computeCapability string) string {
	major, minor, _ := strings.Cut(computeCapability, ".")
	switch major {
	case "7":
		if minor == "5" {
			return "turing"
		}
		return "volta"
	case "8":
		if minor == "9" {
			return "ada"
		}
		return "ampere"
	case "9":
		return "hopper"
	case "10", "12":
		return "blackwell"
	}
	return ""
}

// SetHealth marks a simulated instance unhealthy with reason (an injected
// fault, e.g. "XID 79 (simulated)"), or healthy again, when its
// description goes back to HealthDescription.
func SetHealth(inst *structs.NodeDevice, healthy bool, reason string) {
	inst.Healthy = healthy
	inst.HealthDescription = HealthDescription
	if !healthy {
		inst.HealthDescription = reason
		if reason == "" {
			inst.HealthDescription = "unhealthy (simulated)"
		}
	}
}
