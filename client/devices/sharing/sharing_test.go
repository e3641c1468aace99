package sharing

import (
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/droverhq/drover/client/devices/nvidia"
	"github.com/droverhq/drover/client/devices/simulated"
	"github.com/droverhq/drover/structs"
)

// modes returns every GPU instance's sharing attribute, by ID.
func modes(groups []*structs.NodeDeviceResource) map[string]string {
	out := map[string]string{}
	for _, g := range groups {
		for _, inst := range g.Instances {
			out[inst.ID] = inst.Attributes[structs.DeviceAttrSharing]
		}
	}
	return out
}

// realGPUs returns two models of real-looking (not simulated) GPUs: two
// A100s and one H100.
func realGPUs() []*structs.NodeDeviceResource {
	groups := simulated.Devices("n",
		simulated.Config{Count: 2, Model: "NVIDIA A100-SXM4-40GB"},
		simulated.Config{Count: 1, Model: "NVIDIA H100 80GB HBM3"})
	for _, g := range groups {
		delete(g.Attributes, structs.DeviceAttrSimulated)
	}
	return groups
}

func TestApplyModes(t *testing.T) {
	a100 := realGPUs()[0].Instances
	tests := []struct {
		name   string
		policy Policy
		host   Host
		want   func(a0, a1, h0 string) bool
		warn   string // a warning containing this; "" for none
	}{
		{name: "default is exclusive for real GPUs", want: func(a0, a1, h0 string) bool {
			return a0 == "exclusive" && a1 == "exclusive" && h0 == "exclusive"
		}},
		{name: "node mode", policy: Policy{Mode: "time-slicing"}, want: func(a0, a1, h0 string) bool {
			return a0 == "time-slicing" && a1 == "time-slicing" && h0 == "time-slicing"
		}},
		{name: "model beats node, without the vendor's word", policy: Policy{Mode: "exclusive", Models: map[string]string{"A100-SXM4-40GB": "mps"}}, host: Host{MPS: true},
			want: func(a0, a1, h0 string) bool { return a0 == "mps" && a1 == "mps" && h0 == "exclusive" }},
		{name: "gpu beats model", policy: Policy{Models: map[string]string{"NVIDIA A100-SXM4-40GB": "mps"}, GPUs: map[string]string{a100[1].ID: "exclusive"}}, host: Host{MPS: true},
			want: func(a0, a1, h0 string) bool { return a0 == "mps" && a1 == "exclusive" && h0 == "exclusive" }},
		{name: "mps without the control program is not claimed", policy: Policy{Mode: "mps"},
			want: func(a0, a1, h0 string) bool { return a0 == "exclusive" && h0 == "exclusive" },
			warn: "mps needs nvidia-cuda-mps-control"},
		{name: "mig on a GPU not in MIG mode is not claimed", policy: Policy{GPUs: map[string]string{a100[0].ID: "mig"}},
			want: func(a0, a1, h0 string) bool { return a0 == "exclusive" },
			warn: "is not in MIG mode"},
		{name: "an entry naming nothing is reported", policy: Policy{Models: map[string]string{"B200": "mps"}}, host: Host{MPS: true},
			want: func(a0, a1, h0 string) bool { return a0 == "exclusive" },
			warn: `model "B200" matches no GPU`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups := realGPUs()
			warnings := Apply(groups, tt.policy, tt.host)
			m := modes(groups)
			a0, a1, h0 := m[groups[0].Instances[0].ID], m[groups[0].Instances[1].ID], m[groups[1].Instances[0].ID]
			if !tt.want(a0, a1, h0) {
				t.Errorf("modes: got A100s %s %s, H100 %s", a0, a1, h0)
			}
			joined := strings.Join(warnings, "\n")
			if tt.warn == "" && len(warnings) > 0 || !strings.Contains(joined, tt.warn) {
				t.Errorf("warnings: got %q, want one containing %q", warnings, tt.warn)
			}
		})
	}
}

func TestSimulatedGPUsDefaultToTimeSlicingAndMayUseMPS(t *testing.T) {
	groups := simulated.Devices("n", simulated.Config{Count: 2})
	if w := Apply(groups, Policy{}, Host{}); len(w) != 0 {
		t.Fatalf("warnings: %v", w)
	}
	for id, mode := range modes(groups) {
		if mode != structs.SharingTimeSlicing {
			t.Errorf("simulated GPU %s: got %q, want time-slicing", id, mode)
		}
	}
	// mps on a simulated GPU needs no control program: the client sets the
	// limits and says MPS is simulated.
	groups = simulated.Devices("n", simulated.Config{Count: 1})
	if w := Apply(groups, Policy{Mode: "mps"}, Host{}); len(w) != 0 {
		t.Fatalf("warnings: %v", w)
	}
	if got := groups[0].Instances[0].Attributes[structs.DeviceAttrSharing]; got != structs.SharingMPS {
		t.Errorf("got %q, want mps", got)
	}
}

// The NVML mock's MIG instances are mig by default, may be made exclusive,
// and match their parent's UUID and model.
func TestMIGInstances(t *testing.T) {
	lib := dgxa100.New()
	dev, ret := lib.DeviceGetHandleByIndex(0)
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	if _, ret := dev.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	info, _ := dev.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_1_SLICE)
	for range 2 {
		if _, ret := dev.CreateGpuInstance(&info); ret != nvml.SUCCESS {
			t.Fatal(ret)
		}
	}
	parent, _ := dev.GetUUID()
	fingerprint := func() []*structs.NodeDeviceResource {
		groups, err := nvidia.Fingerprint(lib, nil)
		if err != nil {
			t.Fatal(err)
		}
		return groups
	}
	migModes := func(groups []*structs.NodeDeviceResource) []string {
		var out []string
		for _, g := range groups {
			for _, inst := range g.Instances {
				if inst.Attributes[nvidia.DeviceAttrMIGParent] == parent {
					out = append(out, inst.Attributes[structs.DeviceAttrSharing])
				}
			}
		}
		return out
	}
	tests := []struct {
		name   string
		policy Policy
		want   []string
		warn   string
	}{
		{"default", Policy{}, []string{"mig", "mig"}, ""},
		{"node mps leaves MIG instances mig", Policy{Mode: "mps"}, []string{"mig", "mig"}, "does not apply to MIG instance"},
		{"parent UUID", Policy{GPUs: map[string]string{parent: "exclusive"}}, []string{"exclusive", "exclusive"}, ""},
		{"parent model", Policy{Models: map[string]string{"Mock NVIDIA A100-SXM4-40GB": "exclusive"}}, []string{"exclusive", "exclusive"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups := fingerprint()
			w := Apply(groups, tt.policy, Host{MPS: true})
			if got := migModes(groups); !slices.Equal(got, tt.want) {
				t.Errorf("MIG instances: got %v, want %v", got, tt.want)
			}
			if tt.warn == "" && len(w) > 0 || !strings.Contains(strings.Join(w, "\n"), tt.warn) {
				t.Errorf("warnings: got %q, want %q", w, tt.warn)
			}
		})
	}
}

func TestApplyLeavesOtherDevicesAlone(t *testing.T) {
	fpga := &structs.NodeDeviceResource{Vendor: "xilinx", Type: "fpga", Name: "u250",
		Instances: []*structs.NodeDevice{{ID: "fpga-0", Healthy: true}}}
	Apply([]*structs.NodeDeviceResource{fpga}, Policy{Mode: "time-slicing"}, Host{})
	if v, ok := fpga.Instances[0].Attributes[structs.DeviceAttrSharing]; ok {
		t.Errorf("fpga got sharing %q, want none", v)
	}
}
