package nvidia

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/droverhq/drover/structs"
)

// devices returns the mock server's devices with their concrete type.
func devices(t *testing.T, s *server.Server) []*server.Device {
	t.Helper()
	out := make([]*server.Device, len(s.Devices))
	for i, d := range s.Devices {
		out[i] = d.(*server.Device)
	}
	return out
}

// pciInfo encodes a bus ID the way NVML returns it.
func pciInfo(bus string) nvml.PciInfo {
	var p nvml.PciInfo
	for i := 0; i < len(bus) && i < len(p.BusId)-1; i++ {
		p.BusId[i] = int8(bus[i])
	}
	return p
}

func TestFingerprintDGXA100Mock(t *testing.T) {
	lib := dgxa100.New()
	groups, err := Fingerprint(lib, nil)
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	if len(groups) != 1 {
		t.Fatalf("got %d groups, want 1", len(groups))
	}
	g := groups[0]
	if g.ID() != "nvidia/gpu/Mock NVIDIA A100-SXM4-40GB" {
		t.Errorf("group = %q, want nvidia/gpu/Mock NVIDIA A100-SXM4-40GB", g.ID())
	}
	want := map[string]string{
		structs.DeviceAttrMemory:            "40 GiB",
		structs.DeviceAttrComputeCapability: "8.0",
		structs.DeviceAttrArchitecture:      "ampere",
		structs.DeviceAttrDriverVersion:     "550.54.15",
		structs.DeviceAttrCUDAVersion:       "12.4",
	}
	for k, v := range want {
		if got := g.Attributes[k]; got != v {
			t.Errorf("attribute %s = %q, want %q", k, got, v)
		}
	}
	if _, ok := g.Attributes[structs.DeviceAttrSimulated]; ok {
		t.Error("real (mocked NVML) GPUs carry the simulated attribute")
	}
	devs := devices(t, lib)
	if len(g.Instances) != len(devs) || len(devs) != 8 {
		t.Fatalf("got %d instances, want 8", len(g.Instances))
	}
	for i, inst := range g.Instances {
		if inst.ID != devs[i].UUID {
			t.Errorf("instance %d ID = %q, want the mock's UUID %q", i, inst.ID, devs[i].UUID)
		}
		if !inst.Healthy {
			t.Errorf("instance %d unhealthy: %s", i, inst.HealthDescription)
		}
		// The mock models no topology, so no link is claimed.
		if len(inst.Links) != 0 {
			t.Errorf("instance %d links = %v, want none", i, inst.Links)
		}
	}
	if n := len(lib.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
}

// TestFingerprintHGXBoard models an HGX board: NVLink P2P between every
// pair (NVSwitch), PCI addresses, two NUMA nodes, a 400 W limit.
func TestFingerprintHGXBoard(t *testing.T) {
	lib := dgxa100.New()
	devs := devices(t, lib)
	for i, d := range devs {
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(d.PciBusID), nvml.SUCCESS }
		d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return i / 4, nvml.SUCCESS }
		d.GetPowerManagementLimitFunc = func() (uint32, nvml.Return) { return 400_000, nvml.SUCCESS }
		d.GetP2PStatusFunc = func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
	}
	groups, err := Fingerprint(lib, nil)
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	g := groups[0]
	if got := g.Attributes[structs.DeviceAttrPower]; got != "400 W" {
		t.Errorf("power = %q, want 400 W", got)
	}
	for i, inst := range g.Instances {
		if got := inst.Attributes[structs.DeviceAttrPCIBusID]; got != devs[i].PciBusID || inst.Locality == nil || inst.Locality.PciBusID != got {
			t.Errorf("instance %d pci_bus_id = %q locality %+v, want %q", i, got, inst.Locality, devs[i].PciBusID)
		}
		if got, want := inst.Attributes[structs.DeviceAttrNUMANode], []string{"0", "1"}[i/4]; got != want {
			t.Errorf("instance %d numa_node = %q, want %q", i, got, want)
		}
		if len(inst.Links) != 7 {
			t.Errorf("instance %d has %d links, want 7", i, len(inst.Links))
		}
		for peer, l := range inst.Links {
			if l != structs.LinkNVLink {
				t.Errorf("instance %d -> %s = %q, want nvlink", i, peer, l)
			}
		}
	}
}

// TestFingerprintPCIeTopology models a PCIe box: no NVLink P2P query, one
// NVLink bridge between GPUs 0 and 1 (seen through NvLink state and the
// remote PCI address), pairs behind PCIe switches, NUMA nodes of four.
func TestFingerprintPCIeTopology(t *testing.T) {
	lib := dgxa100.New()
	devs := devices(t, lib)
	for i, d := range devs {
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(d.PciBusID), nvml.SUCCESS }
		d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			if i > 1 {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			if link > 0 {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(int) (nvml.PciInfo, nvml.Return) {
			// NVML reports remote ends with an 8-digit domain.
			return pciInfo("0000" + devs[1-i].PciBusID), nvml.SUCCESS
		}
		d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			j := other.(*server.Device).Index
			switch {
			case i/2 == j/2:
				return nvml.TOPOLOGY_SINGLE, nvml.SUCCESS
			case i/4 == j/4:
				return nvml.TOPOLOGY_NODE, nvml.SUCCESS
			}
			return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
		}
	}
	groups, err := Fingerprint(lib, nil)
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	inst := groups[0].Instances
	tests := []struct {
		name string
		a, b int
		want string
	}{
		{"nvlink bridge", 0, 1, structs.LinkNVLink},
		{"nvlink bridge reverse", 1, 0, structs.LinkNVLink},
		{"pcie switch", 2, 3, structs.LinkPCIeSwitch},
		{"same numa node", 0, 2, structs.LinkHostBridge},
		{"across sockets", 1, 4, structs.LinkSystem},
		{"across sockets reverse", 7, 0, structs.LinkSystem},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := inst[tt.a].Links[inst[tt.b].ID]; got != tt.want {
				t.Errorf("link %d -> %d = %q, want %q", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestFingerprintMixedModels(t *testing.T) {
	lib := dgxa100.NewWithGPUs(gpus.A100_SXM4_40GB, gpus.H100_SXM5_80GB, gpus.A100_SXM4_40GB)
	groups, err := Fingerprint(lib, nil)
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	if len(groups) != 2 {
		t.Fatalf("got %d groups, want 2", len(groups))
	}
	tests := []struct {
		name, memory, cc, arch string
		count                  int
	}{
		{"Mock NVIDIA A100-SXM4-40GB", "40 GiB", "8.0", "ampere", 2},
		{"NVIDIA H100 80GB HBM3", "80 GiB", "9.0", "hopper", 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := groups[i]
			if g.Name != tt.name || len(g.Instances) != tt.count {
				t.Errorf("group %d = %q with %d instances, want %q with %d", i, g.Name, len(g.Instances), tt.name, tt.count)
			}
			a := g.Attributes
			if a[structs.DeviceAttrMemory] != tt.memory || a[structs.DeviceAttrComputeCapability] != tt.cc || a[structs.DeviceAttrArchitecture] != tt.arch {
				t.Errorf("attributes = %v, want memory %s, cc %s, arch %s", a, tt.memory, tt.cc, tt.arch)
			}
		})
	}
}

func TestFingerprintDeviceErrors(t *testing.T) {
	lib := dgxa100.New()
	devs := devices(t, lib)
	devs[3].GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
	devs[5].GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
	groups, err := Fingerprint(lib, nil)
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	inst := groups[0].Instances
	if len(inst) != 7 {
		t.Fatalf("got %d instances, want 7 (GPU 3 has no UUID)", len(inst))
	}
	for _, in := range inst {
		wantHealthy := in.ID != devs[5].UUID
		if in.Healthy != wantHealthy {
			t.Errorf("instance %s healthy = %v (%s), want %v", in.ID, in.Healthy, in.HealthDescription, wantHealthy)
		}
	}
}

func TestFingerprintNoDriver(t *testing.T) {
	tests := []struct {
		name string
		ret  nvml.Return
	}{
		{"library not found", nvml.ERROR_LIBRARY_NOT_FOUND},
		{"driver not loaded", nvml.ERROR_DRIVER_NOT_LOADED},
		{"no permission", nvml.ERROR_NO_PERMISSION},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := &mock.Interface{InitFunc: func() nvml.Return { return tt.ret }}
			groups, err := Fingerprint(lib, nil)
			if !errors.Is(err, ErrNoDriver) || groups != nil {
				t.Errorf("Fingerprint = %v, %v, want nil, ErrNoDriver", groups, err)
			}
			if n := len(lib.ShutdownCalls()); n != 0 {
				t.Errorf("Shutdown called %d times after a failed Init, want 0", n)
			}
		})
	}
}

func TestFingerprintDeviceCountError(t *testing.T) {
	lib := dgxa100.New()
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	if _, err := Fingerprint(lib, nil); err == nil || errors.Is(err, ErrNoDriver) {
		t.Errorf("Fingerprint = %v, want a device count error that is not ErrNoDriver", err)
	}
}

// TestFingerprintRealLibrary runs against the host's NVML: no driver is
// the normal case on a build machine; on a GPU machine every GPU must
// carry the basic facts.
func TestFingerprintRealLibrary(t *testing.T) {
	groups, err := Fingerprint(nvml.New(), nil)
	if errors.Is(err, ErrNoDriver) {
		t.Skipf("no NVIDIA driver here: %v", err)
	}
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	for _, g := range groups {
		t.Logf("%s: %d instances, %v", g.ID(), len(g.Instances), g.Attributes)
		for _, k := range []string{structs.DeviceAttrMemory, structs.DeviceAttrComputeCapability, structs.DeviceAttrDriverVersion} {
			if g.Attributes[k] == "" {
				t.Errorf("%s: attribute %s missing", g.ID(), k)
			}
		}
		for _, inst := range g.Instances {
			t.Logf("  %s healthy=%v %v links=%v", inst.ID, inst.Healthy, inst.Attributes, inst.Links)
			if inst.Attributes[structs.DeviceAttrPCIBusID] == "" {
				t.Errorf("%s: no pci_bus_id", inst.ID)
			}
		}
	}
}

func TestCUDAVersion(t *testing.T) {
	tests := map[int]string{12040: "12.4", 11080: "11.8", 12090: "12.9", 13000: "13.0"}
	for in, want := range tests {
		if got := CUDAVersion(in); got != want {
			t.Errorf("CUDAVersion(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizeBusID(t *testing.T) {
	tests := []struct{ a, b string }{
		{"00000000:07:00.0", "0000:07:00.0"},
		{"0000:AB:00.0", "0000:ab:00.0"},
		{"00000001:01:00.0", "0001:01:00.0"},
	}
	for _, tt := range tests {
		if x, y := normalizeBusID(tt.a), normalizeBusID(tt.b); x != y {
			t.Errorf("normalizeBusID(%q) = %q, normalizeBusID(%q) = %q, want equal", tt.a, x, tt.b, y)
		}
	}
}
