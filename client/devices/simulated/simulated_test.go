package simulated

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestDevicesDefaults(t *testing.T) {
	groups := Devices("node-a", Config{Count: 8})
	if len(groups) != 1 {
		t.Fatalf("got %d groups, want 1", len(groups))
	}
	g := groups[0]
	if g.Vendor != "nvidia" || g.Type != "gpu" || g.Name != DefaultModel {
		t.Errorf("group = %s, want nvidia/gpu/%s", g.ID(), DefaultModel)
	}
	wantAttrs := map[string]string{
		structs.DeviceAttrMemory:            "80 GiB",
		structs.DeviceAttrComputeCapability: "9.0",
		structs.DeviceAttrArchitecture:      "hopper",
		structs.DeviceAttrDriverVersion:     DriverVersion,
		structs.DeviceAttrCUDAVersion:       CUDAVersion,
		structs.DeviceAttrSimulated:         "true",
	}
	for k, v := range wantAttrs {
		if got := g.Attributes[k]; got != v {
			t.Errorf("attribute %s = %q, want %q", k, got, v)
		}
	}
	if len(g.Instances) != 8 {
		t.Fatalf("got %d instances, want 8", len(g.Instances))
	}
	seen := map[string]bool{}
	for i, inst := range g.Instances {
		if !strings.HasPrefix(inst.ID, "GPU-") || seen[inst.ID] {
			t.Errorf("instance %d ID %q is not a fresh GPU UUID", i, inst.ID)
		}
		seen[inst.ID] = true
		if !inst.Healthy || inst.HealthDescription != HealthDescription {
			t.Errorf("instance %d health = %v %q, want healthy %q", i, inst.Healthy, inst.HealthDescription, HealthDescription)
		}
		if inst.Locality == nil || inst.Locality.PciBusID != inst.Attributes[structs.DeviceAttrPCIBusID] {
			t.Errorf("instance %d locality %+v does not match pci_bus_id %q", i, inst.Locality, inst.Attributes[structs.DeviceAttrPCIBusID])
		}
		if len(inst.Links) != 7 {
			t.Errorf("instance %d has %d links, want 7", i, len(inst.Links))
		}
		for peer, l := range inst.Links {
			if l != structs.LinkNVLink {
				t.Errorf("instance %d -> %s link = %q, want nvlink (one HGX board)", i, peer, l)
			}
		}
	}
}

func TestDevicesDeterministic(t *testing.T) {
	a := Devices("node-a", Config{Count: 2}, Config{Count: 1, Model: "NVIDIA A100-SXM4-40GB"})
	b := Devices("node-a", Config{Count: 2}, Config{Count: 1, Model: "NVIDIA A100-SXM4-40GB"})
	other := Devices("node-b", Config{Count: 2})
	for gi := range a {
		for ii := range a[gi].Instances {
			if got, want := a[gi].Instances[ii].ID, b[gi].Instances[ii].ID; got != want {
				t.Errorf("group %d instance %d: ID %s then %s, want stable", gi, ii, got, want)
			}
		}
	}
	if a[0].Instances[0].ID == other[0].Instances[0].ID {
		t.Errorf("nodes node-a and node-b share GPU UUID %s", a[0].Instances[0].ID)
	}
	// Adding another model does not renumber the first model's GPUs.
	alone := Devices("node-a", Config{Count: 2})
	if alone[0].Instances[1].ID != a[0].Instances[1].ID {
		t.Errorf("H100 #1 is %s alone and %s with an A100 configured", alone[0].Instances[1].ID, a[0].Instances[1].ID)
	}
}

func TestDevicesGroupsAndTopology(t *testing.T) {
	groups := Devices("n",
		Config{Count: 12, Model: "NVIDIA H100 80GB HBM3"},
		Config{Count: 0, Model: "ignored"},
		Config{Count: 2, Model: "NVIDIA A100-SXM4-40GB", MemoryBytes: 40 << 30, ComputeCapability: "8.0"},
		Config{Count: 1, Model: "NVIDIA H100 80GB HBM3"},
	)
	if len(groups) != 2 {
		t.Fatalf("got %d groups, want 2 (H100, A100)", len(groups))
	}
	h100, a100 := groups[0], groups[1]
	if len(h100.Instances) != 13 || len(a100.Instances) != 2 {
		t.Fatalf("got %d H100 and %d A100, want 13 and 2", len(h100.Instances), len(a100.Instances))
	}
	if got := a100.Attributes[structs.DeviceAttrMemory]; got != "40 GiB" {
		t.Errorf("A100 memory = %q, want 40 GiB", got)
	}
	if got := a100.Attributes[structs.DeviceAttrArchitecture]; got != "ampere" {
		t.Errorf("A100 architecture = %q, want ampere", got)
	}
	h := h100.Instances
	tests := []struct {
		name string
		a, b *structs.NodeDevice
		want string
	}{
		{"same board, same NUMA", h[0], h[1], structs.LinkNVLink},
		{"same board, other NUMA", h[0], h[7], structs.LinkNVLink},
		{"second board, same NUMA", h[8], h[11], structs.LinkNVLink},
		{"across boards", h[0], h[8], structs.LinkSystem},
		{"other config, same NUMA", h[12], a100.Instances[0], structs.LinkHostBridge},
		{"other config, other NUMA", h[0], a100.Instances[0], structs.LinkSystem},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Links[tt.b.ID]; got != tt.want {
				t.Errorf("link = %q, want %q", got, tt.want)
			}
			if got := tt.b.Links[tt.a.ID]; got != tt.want {
				t.Errorf("reverse link = %q, want %q (symmetric)", got, tt.want)
			}
		})
	}
	if got := h[7].Attributes[structs.DeviceAttrNUMANode]; got != "1" {
		t.Errorf("GPU 7 numa_node = %q, want 1", got)
	}
}

func TestArchitecture(t *testing.T) {
	tests := map[string]string{
		"7.0": "volta", "7.5": "turing", "8.0": "ampere", "8.6": "ampere",
		"8.9": "ada", "9.0": "hopper", "10.0": "blackwell", "12.0": "blackwell", "5.2": "", "": "",
	}
	for cc, want := range tests {
		t.Run(cc, func(t *testing.T) {
			if got := Architecture(cc); got != want {
				t.Errorf("Architecture(%q) = %q, want %q", cc, got, want)
			}
		})
	}
}

func TestSetHealth(t *testing.T) {
	inst := Devices("n1", Config{Count: 1})[0].Instances[0]
	tests := []struct {
		name     string
		healthy  bool
		reason   string
		wantDesc string
	}{
		{"fail", false, "XID 79 (simulated)", "XID 79 (simulated)"},
		{"fail without reason", false, "", "unhealthy (simulated)"},
		{"recover", true, "ignored", HealthDescription},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SetHealth(inst, tt.healthy, tt.reason)
			if inst.Healthy != tt.healthy || inst.HealthDescription != tt.wantDesc {
				t.Errorf("got healthy=%v %q, want %v %q", inst.Healthy, inst.HealthDescription, tt.healthy, tt.wantDesc)
			}
		})
	}
}
