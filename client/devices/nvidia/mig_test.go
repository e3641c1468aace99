package nvidia

import (
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/droverhq/drover/structs"
)

// createGI carves a GPU instance of profile p on d (MIG mode must be on).
func createGI(t *testing.T, d nvml.Device, p int) {
	t.Helper()
	info, ret := d.GetGpuInstanceProfileInfo(p)
	if ret != nvml.SUCCESS {
		t.Fatalf("profile %d: %v", p, ret)
	}
	if _, ret := d.CreateGpuInstance(&info); ret != nvml.SUCCESS {
		t.Fatalf("create GPU instance: %v", ret)
	}
}

// TestFingerprintMIG turns MIG on for GPUs 0 and 1 of the DGX A100 mock:
// GPU 0 split into two 1g.5gb and one 3g.20gb instances, GPU 1 into one
// 7g.40gb whose MIG device UUID the driver reports. The other six stay
// whole GPUs.
func TestFingerprintMIG(t *testing.T) {
	lib := dgxa100.New()
	devs := devices(t, lib)
	for _, d := range devs[:2] {
		if _, ret := d.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
			t.Fatalf("SetMigMode: %v", ret)
		}
	}
	createGI(t, devs[0], nvml.GPU_INSTANCE_PROFILE_1_SLICE)
	createGI(t, devs[0], nvml.GPU_INSTANCE_PROFILE_1_SLICE)
	createGI(t, devs[0], nvml.GPU_INSTANCE_PROFILE_3_SLICE)
	createGI(t, devs[1], nvml.GPU_INSTANCE_PROFILE_7_SLICE)
	const migUUID = "MIG-5c6a8d5e-0000-4000-8000-000000000001"
	devs[1].GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	devs[1].GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i > 0 {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return &mock.Device{
			GetUUIDFunc:          func() (string, nvml.Return) { return migUUID, nvml.SUCCESS },
			GetGpuInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		}, nvml.SUCCESS
	}

	groups, err := Fingerprint(lib, nil)
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	byName := map[string]*structs.NodeDeviceResource{}
	for _, g := range groups {
		byName[g.Name] = g
	}
	const model = "Mock NVIDIA A100-SXM4-40GB"
	tests := []struct {
		group, profile, memory string
		ids                    []string
		compute                string
	}{
		{model, "", "40 GiB", nil, ""},
		{model + " MIG 1g.5gb", "1g.5gb", "4.75 GiB", []string{"MIG-" + devs[0].UUID + "/0/0", "MIG-" + devs[0].UUID + "/1/0"}, "14"},
		{model + " MIG 3g.20gb", "3g.20gb", "19.5 GiB", []string{"MIG-" + devs[0].UUID + "/2/0"}, "42"},
		{model + " MIG 7g.40gb", "7g.40gb", "39.25 GiB", []string{migUUID}, "100"},
	}
	if len(groups) != len(tests) {
		t.Fatalf("got %d groups, want %d", len(groups), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.group, func(t *testing.T) {
			g := byName[tt.group]
			if g == nil {
				t.Fatalf("no group %q", tt.group)
			}
			if got := g.Attributes[structs.DeviceAttrMIGProfile]; got != tt.profile {
				t.Errorf("mig_profile = %q, want %q", got, tt.profile)
			}
			if got := g.Attributes[structs.DeviceAttrComputeCapability]; got != "8.0" {
				t.Errorf("compute_capability = %q, want 8.0", got)
			}
			if tt.ids == nil {
				if len(g.Instances) != 6 {
					t.Errorf("whole GPUs = %d, want 6", len(g.Instances))
				}
				for _, in := range g.Instances {
					if in.ID == devs[0].UUID || in.ID == devs[1].UUID {
						t.Errorf("GPU %s in MIG mode offered whole", in.ID)
					}
				}
				return
			}
			var ids []string
			for _, in := range g.Instances {
				ids = append(ids, in.ID)
				if got := in.Attributes[structs.DeviceAttrMIGCompute]; got != tt.compute {
					t.Errorf("instance %s mig_compute = %q, want %q", in.ID, got, tt.compute)
				}
				if in.Attributes[structs.DeviceAttrMIGProfile] != tt.profile || !strings.HasPrefix(in.Attributes[DeviceAttrMIGParent], "GPU-") || !in.Healthy {
					t.Errorf("instance %s attributes %v healthy %v", in.ID, in.Attributes, in.Healthy)
				}
			}
			if strings.Join(ids, ",") != strings.Join(tt.ids, ",") {
				t.Errorf("instances = %v, want %v", ids, tt.ids)
			}
			if got := g.Attributes[structs.DeviceAttrMemory]; got != tt.memory {
				t.Errorf("memory = %q, want %q", got, tt.memory)
			}
		})
	}
}

func TestProfileName(t *testing.T) {
	tests := []struct {
		slices uint32
		mb     uint64
		want   string
	}{
		{1, 4864, "1g.5gb"},
		{2, 9856, "2g.10gb"},
		{3, 19968, "3g.20gb"},
		{7, 40192, "7g.40gb"},
		{7, 80 * 1024, "7g.80gb"},
	}
	for _, tt := range tests {
		got := ProfileName(nvml.GpuInstanceProfileInfo{SliceCount: tt.slices, MemorySizeMB: tt.mb})
		if got != tt.want {
			t.Errorf("ProfileName(%d, %d MB) = %q, want %q", tt.slices, tt.mb, got, tt.want)
		}
	}
}
