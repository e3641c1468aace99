package structs

import (
	"errors"
	"strings"
	"testing"
)

func TestNamespaceValidate(t *testing.T) {
	tests := []struct {
		name    string
		ns      Namespace
		wantErr string
	}{
		{name: "ok", ns: Namespace{Name: "team-a", Quota: "gpus"}},
		{name: "empty name", ns: Namespace{}, wantErr: `namespace name ""`},
		{name: "bad name", ns: Namespace{Name: "team/a"}, wantErr: "letters, digits or dashes"},
		{name: "long name", ns: Namespace{Name: strings.Repeat("a", 129)}, wantErr: "letters, digits or dashes"},
		{name: "long description", ns: Namespace{Name: "a", Description: strings.Repeat("d", 257)}, wantErr: "at most 256"},
		{name: "bad quota name", ns: Namespace{Name: "a", Quota: "q q"}, wantErr: `quota name "q q"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ns.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestQuotaSpecValidate(t *testing.T) {
	limit := func(region string) *QuotaLimit {
		return &QuotaLimit{Region: region, RegionLimit: &RegionLimit{GPUs: 1}}
	}
	tests := []struct {
		name    string
		q       QuotaSpec
		wantErr string
	}{
		{name: "ok", q: QuotaSpec{Name: "q", Limits: []*QuotaLimit{limit("global"), limit("eu")}}},
		{name: "none allowed is valid", q: QuotaSpec{Name: "q", Limits: []*QuotaLimit{{Region: "global", RegionLimit: &RegionLimit{GPUs: -1, CPU: -5}}}}},
		{name: "bad name", q: QuotaSpec{Name: "", Limits: []*QuotaLimit{limit("global")}}, wantErr: "name"},
		{name: "no limits", q: QuotaSpec{Name: "q"}, wantErr: "no limit"},
		{name: "nil limit", q: QuotaSpec{Name: "q", Limits: []*QuotaLimit{nil}}, wantErr: "limit 0: missing"},
		{name: "no region", q: QuotaSpec{Name: "q", Limits: []*QuotaLimit{limit("")}}, wantErr: "missing region"},
		{name: "region twice", q: QuotaSpec{Name: "q", Limits: []*QuotaLimit{limit("eu"), limit("eu")}}, wantErr: `region "eu" has another limit`},
		{name: "no region_limit", q: QuotaSpec{Name: "q", Limits: []*QuotaLimit{{Region: "eu"}}}, wantErr: "missing region_limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid containing %q", err, tt.wantErr)
			}
		})
	}
	if err := (&QuotaSpec{Name: "q", Limits: []*QuotaLimit{{Region: "eu"}}}).CheckShape(); !errors.Is(err, ErrInvalid) {
		t.Errorf("CheckShape of a limit without region_limit: got %v, want ErrInvalid", err)
	}
}

func TestQuotaCheck(t *testing.T) {
	gpus := func(n int64) QuotaResources { return QuotaResources{GPUCompute: n * WholeGPU} }
	tests := []struct {
		name       string
		limit      *RegionLimit
		used, need QuotaResources
		wantReason string // "" fits
	}{
		{name: "no limit", limit: nil, used: gpus(100), need: gpus(1)},
		{name: "fits", limit: &RegionLimit{GPUs: 2}, used: gpus(1), need: gpus(1)},
		{name: "full", limit: &RegionLimit{GPUs: 2}, used: gpus(2), need: gpus(1), wantReason: `quota "q" exhausted: gpu 2 of 2 used, need 1`},
		{name: "slices", limit: &RegionLimit{GPUs: 1}, used: QuotaResources{GPUCompute: 80}, need: QuotaResources{GPUCompute: 25},
			wantReason: `quota "q" exhausted: gpu 0.80 of 1 used, need 0.25`},
		{name: "zero is unlimited", limit: &RegionLimit{GPUs: 0}, used: gpus(50), need: gpus(1)},
		{name: "none allowed", limit: &RegionLimit{CPU: -1}, need: QuotaResources{CPU: 100}, wantReason: `quota "q" exhausted: cpu none allowed, need 100 MHz`},
		{name: "none allowed, not asked", limit: &RegionLimit{GPUs: -1}, need: QuotaResources{CPU: 100}},
		{name: "over a lowered limit, not asked", limit: &RegionLimit{GPUs: 1}, used: gpus(3), need: QuotaResources{CPU: 100}},
		{name: "memory", limit: &RegionLimit{MemoryMB: 1024}, used: QuotaResources{MemoryMB: 1000}, need: QuotaResources{MemoryMB: 100},
			wantReason: `quota "q" exhausted: memory 1000 MiB of 1 GiB used, need 100 MiB`},
		{name: "gpu memory", limit: &RegionLimit{GPUMemoryMB: 80 << 10}, used: QuotaResources{GPUMemoryMB: 60 << 10}, need: QuotaResources{GPUMemoryMB: 40 << 10},
			wantReason: `quota "q" exhausted: gpu_memory 60 GiB of 80 GiB used, need 40 GiB`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason := QuotaCheck("q", tt.limit, tt.used, tt.need)
			if ok != (tt.wantReason == "") || reason != tt.wantReason {
				t.Errorf("got %v %q, want reason %q", ok, reason, tt.wantReason)
			}
		})
	}
}

func TestAllocQuotaResources(t *testing.T) {
	node := &Node{NodeResources: &NodeResources{Devices: []*NodeDeviceResource{{
		Vendor: "nvidia", Type: "gpu", Name: "H100", Attributes: map[string]string{DeviceAttrMemory: "80 GiB"},
		Instances: []*NodeDevice{{ID: "g0"}, {ID: "g1"}, {ID: "g2"}},
	}}}}
	alloc := &Allocation{AllocatedResources: &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{
		"whole": {Cpu: AllocatedCpuResources{CpuShares: 1000}, Memory: AllocatedMemoryResources{MemoryMB: 512},
			Devices: []*AllocatedDeviceResource{{Type: "gpu", DeviceIDs: []string{"g0", "g1"}}, nil}},
		"slice": {Cpu: AllocatedCpuResources{CpuShares: 500},
			Devices: []*AllocatedDeviceResource{{Type: "gpu", DeviceIDs: []string{"g2"}, Compute: 25, MemoryMB: 20 << 10}}},
		"memory-only": {Devices: []*AllocatedDeviceResource{{Type: "gpu", DeviceIDs: []string{"g2"}, MemoryMB: 1024}}},
		"fpga":        {Devices: []*AllocatedDeviceResource{{Type: "fpga", DeviceIDs: []string{"f0"}}}},
		"nil":         nil,
	}}}
	want := QuotaResources{CPU: 1500, MemoryMB: 512, GPUCompute: 2*WholeGPU + 25 + 1, GPUMemoryMB: 2*(80<<10) + 20<<10 + 1024}
	if got := AllocQuotaResources(alloc, node); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	want.GPUMemoryMB -= 2 * (80 << 10) // whole GPUs count no memory without their node
	if got := AllocQuotaResources(alloc, nil); got != want {
		t.Errorf("without the node: got %+v, want %+v", got, want)
	}
}

func TestQuotaCopiesAreDeep(t *testing.T) {
	q := &QuotaSpec{Name: "q", Limits: []*QuotaLimit{{Region: "global", RegionLimit: &RegionLimit{GPUs: 1}}, nil}}
	c := q.Copy()
	c.Limits[0].RegionLimit.GPUs = 5
	if q.Limits[0].RegionLimit.GPUs != 1 || c.Limits[1] != nil {
		t.Errorf("quota copy shares its limits (or lost a nil one)")
	}
	ns := &Namespace{Name: "a", Meta: map[string]string{"k": "v"}}
	nc := ns.Copy()
	nc.Meta["k"] = "changed"
	if ns.Meta["k"] != "v" {
		t.Errorf("namespace copy shares its meta")
	}
}
