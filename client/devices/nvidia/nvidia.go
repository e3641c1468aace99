// Package nvidia fingerprints NVIDIA GPUs through NVML (go-nvml): one
// device group per model, one instance per GPU keyed by its UUID, with
// memory, compute capability, architecture, driver and CUDA versions,
// power limit, PCI bus ID, NUMA node and a best-effort link matrix
// (links.go). A GPU in MIG mode is reported as its MIG devices instead,
// one group per profile with the mig_profile attribute (mig.go).
//
// Watcher (health.go) follows NVML's XID and ECC events and reports GPUs
// that become unhealthy, and healthy again after a quiet period.
//
// NVML is taken as an nvml.Interface so tests run against go-nvml's own
// mocks (pkg/nvml/mock/dgxa100). A host without the NVIDIA driver is a
// normal case: Fingerprint returns ErrNoDriver and the caller reports
// zero GPUs. It must not start processes or touch GPUs beyond NVML's
// read-only queries.
package nvidia

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// ErrNoDriver means NVML could not be initialised: no NVIDIA driver (or
// library) on this host, so it has no NVIDIA GPUs to offer.
var ErrNoDriver = errors.New("nvidia: no NVIDIA driver found")

// Vendor and Type of the device groups this package reports.
const (
	Vendor = "nvidia"
	Type   = "gpu"
)

// gpu is one device as read from NVML.
type gpu struct {
	dev      nvml.Device
	uuid     string
	model    string
	busID    string
	groupKV  map[string]string // attributes shared by the model's group
	instance *structs.NodeDevice
	// mig holds the GPU's MIG devices when MIG mode is on; such a GPU is
	// offered only as its MIG devices, not as a whole GPU.
	mig []migDevice
}

// Fingerprint reads every NVIDIA GPU on the host. It calls lib.Init and
// lib.Shutdown itself. A GPU whose UUID cannot be read is skipped with a
// warning; facts a GPU does not support are left out.
func Fingerprint(lib nvml.Interface, logger hclog.Logger) ([]*structs.NodeDeviceResource, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if ret := call0(lib.Init); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: init: %v", ErrNoDriver, ret)
	}
	defer func() {
		if ret := call0(lib.Shutdown); ret != nvml.SUCCESS {
			logger.Warn("NVML shutdown", "error", ret)
		}
	}()

	system := map[string]string{}
	if v, ret := call(lib.SystemGetDriverVersion); ret == nvml.SUCCESS {
		system[structs.DeviceAttrDriverVersion] = v
	}
	if v, ret := call(lib.SystemGetCudaDriverVersion); ret == nvml.SUCCESS {
		system[structs.DeviceAttrCUDAVersion] = CUDAVersion(v)
	}
	count, ret := call(lib.DeviceGetCount)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvidia: device count: %v", ret)
	}
	var gpus []*gpu
	for i := 0; i < count; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			logger.Warn("skipping GPU: no handle", "index", i, "error", ret)
			continue
		}
		g, err := readGPU(dev, system)
		if err != nil {
			logger.Warn("skipping GPU", "index", i, "error", err)
			continue
		}
		if migEnabled(dev) {
			g.mig = readMIG(dev, g.uuid)
			logger.Debug("MIG mode on", "uuid", g.uuid, "mig_devices", len(g.mig))
		}
		logger.Debug("found GPU", "index", i, "uuid", g.uuid, "model", g.model)
		gpus = append(gpus, g)
	}
	linkGPUs(gpus)
	return append(group(gpus), migGroups(gpus)...), nil
}

// readGPU reads one device's facts. Only the UUID is required.
func readGPU(dev nvml.Device, system map[string]string) (*gpu, error) {
	uuid, ret := call(dev.GetUUID)
	if ret != nvml.SUCCESS || uuid == "" {
		return nil, fmt.Errorf("uuid: %v", ret)
	}
	g := &gpu{dev: dev, uuid: uuid, model: "unknown", groupKV: map[string]string{}}
	for k, v := range system {
		g.groupKV[k] = v
	}
	inst := &structs.NodeDevice{ID: uuid, Healthy: true, HealthDescription: "healthy", Attributes: map[string]string{}}
	g.instance = inst
	if name, ret := call(dev.GetName); ret == nvml.SUCCESS && name != "" {
		g.model = name
	}
	switch mem, ret := call(dev.GetMemoryInfo); {
	case ret == nvml.SUCCESS:
		g.groupKV[structs.DeviceAttrMemory] = structs.FormatBytes(mem.Total)
	case !unsupported(ret):
		inst.Healthy = false
		inst.HealthDescription = fmt.Sprintf("memory info: %v", ret)
	}
	cc, ret := call(func() (string, nvml.Return) {
		major, minor, ret := dev.GetCudaComputeCapability()
		return fmt.Sprintf("%d.%d", major, minor), ret
	})
	if ret == nvml.SUCCESS {
		g.groupKV[structs.DeviceAttrComputeCapability] = cc
	}
	if arch, ret := call(dev.GetArchitecture); ret == nvml.SUCCESS {
		if name := Architecture(arch); name != "" {
			g.groupKV[structs.DeviceAttrArchitecture] = name
		}
	}
	if mw, ret := call(dev.GetPowerManagementLimit); ret == nvml.SUCCESS && mw > 0 {
		g.groupKV[structs.DeviceAttrPower] = fmt.Sprintf("%d W", mw/1000)
	}
	if pci, ret := call(dev.GetPciInfo); ret == nvml.SUCCESS {
		if bus := busID(pci); bus != "" {
			g.busID = bus
			inst.Locality = &structs.NodeDeviceLocality{PciBusID: bus}
			inst.Attributes[structs.DeviceAttrPCIBusID] = bus
		}
	}
	if numa, ret := call(dev.GetNumaNodeId); ret == nvml.SUCCESS && numa >= 0 {
		inst.Attributes[structs.DeviceAttrNUMANode] = strconv.Itoa(numa)
	}
	return g, nil
}

// group collects GPUs into one device group per model, in order of first
// appearance; a group's attributes are its first GPU's. GPUs in MIG mode
// are left to migGroups.
func group(gpus []*gpu) []*structs.NodeDeviceResource {
	var out []*structs.NodeDeviceResource
	byModel := map[string]*structs.NodeDeviceResource{}
	for _, g := range gpus {
		if g.mig != nil {
			continue
		}
		res := byModel[g.model]
		if res == nil {
			res = &structs.NodeDeviceResource{Vendor: Vendor, Type: Type, Name: g.model, Attributes: g.groupKV}
			byModel[g.model] = res
			out = append(out, res)
		}
		res.Instances = append(res.Instances, g.instance)
	}
	return out
}

// CUDAVersion renders NVML's CUDA driver version (12040) as "12.4".
func CUDAVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

// Architecture names an NVML device architecture, or "" when unknown.
func Architecture(a nvml.DeviceArchitecture) string {
	switch a {
	case nvml.DEVICE_ARCH_KEPLER:
		return "kepler"
	case nvml.DEVICE_ARCH_MAXWELL:
		return "maxwell"
	case nvml.DEVICE_ARCH_PASCAL:
		return "pascal"
	case nvml.DEVICE_ARCH_VOLTA:
		return "volta"
	case nvml.DEVICE_ARCH_TURING:
		return "turing"
	case nvml.DEVICE_ARCH_AMPERE:
		return "ampere"
	case nvml.DEVICE_ARCH_ADA:
		return "ada"
	case nvml.DEVICE_ARCH_HOPPER:
		return "hopper"
	case nvml.DEVICE_ARCH_BLACKWELL:
		return "blackwell"
	case nvml.DEVICE_ARCH_RUBIN:
		return "rubin"
	}
	return ""
}

// busID renders a PCI bus ID from NVML's NUL-terminated char array.
func busID(p nvml.PciInfo) string {
	var b strings.Builder
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// normalizeBusID makes bus IDs comparable: NVML writes the domain with 8
// digits in some calls and 4 in others, in either case.
func normalizeBusID(id string) string {
	domain, rest, ok := strings.Cut(strings.ToLower(id), ":")
	if !ok {
		return strings.ToLower(id)
	}
	if d, err := strconv.ParseUint(domain, 16, 32); err == nil {
		return fmt.Sprintf("%04x:%s", d, rest)
	}
	return domain + ":" + rest
}

func unsupported(ret nvml.Return) bool {
	return ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND
}
