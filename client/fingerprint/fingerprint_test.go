package fingerprint

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestParseCPUInfo(t *testing.T) {
	tests := []struct {
		name string
		text string
		want CPUInfo
	}{
		{
			name: "fastest core wins",
			text: "model name\t: Xeon @ 2.00GHz\ncpu MHz\t\t: 2000.000\n\nmodel name\t: Xeon @ 2.00GHz\ncpu MHz\t\t: 3800.5\n",
			want: CPUInfo{ModelName: "Xeon @ 2.00GHz", MHz: 3800.5},
		},
		{
			name: "speed from model name",
			text: "model name\t: Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz\n",
			want: CPUInfo{ModelName: "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz", MHz: 2300},
		},
		{
			name: "arm without speed",
			text: "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n",
			want: CPUInfo{},
		},
		{name: "empty", text: "", want: CPUInfo{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseCPUInfo(tt.text); got != tt.want {
				t.Errorf("ParseCPUInfo() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCPUResources(t *testing.T) {
	tests := []struct {
		name  string
		cores int
		mhz   float64
		want  structs.NodeCpuResources
	}{
		{"typical", 8, 2300, structs.NodeCpuResources{CpuShares: 18400, TotalCpuCores: 8}},
		{"speed rounds to whole MHz", 3, 2000.6, structs.NodeCpuResources{CpuShares: 6003, TotalCpuCores: 3}},
		{"zero cores is one", 0, 1000, structs.NodeCpuResources{CpuShares: 1000, TotalCpuCores: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CPUResources(tt.cores, tt.mhz); got != tt.want {
				t.Errorf("CPUResources(%d, %v) = %+v, want %+v", tt.cores, tt.mhz, got, tt.want)
			}
		})
	}
}

func TestParseMemTotal(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    uint64
		wantErr bool
	}{
		{"kB", "MemTotal:       24684092 kB\nMemFree: 1 kB\n", 24684092 * 1024, false},
		{"not first line", "Foo: 1 kB\nMemTotal: 1024 kB\n", 1 << 20, false},
		{"missing", "MemFree: 1 kB\n", 0, true},
		{"garbage", "MemTotal: lots kB\n", 0, true},
		{"unknown unit", "MemTotal: 12 MB\n", 0, true},
		{"empty", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMemTotal(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseMemTotal() error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseMemTotal() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParseOSRelease(t *testing.T) {
	tests := []struct {
		name, text, wantID, wantVersion string
	}{
		{"debian", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_ID=\"12\"\nID=debian\n", "debian", "12"},
		{"single quotes", "ID='rhel'\nVERSION_ID='9.4'\n", "rhel", "9.4"},
		{"ID_LIKE ignored", "ID_LIKE=debian\nID=ubuntu\n", "ubuntu", ""},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, version := ParseOSRelease(tt.text)
			if id != tt.wantID || version != tt.wantVersion {
				t.Errorf("ParseOSRelease() = %q, %q, want %q, %q", id, version, tt.wantID, tt.wantVersion)
			}
		})
	}
}

func TestFingerprintFixtureHost(t *testing.T) {
	h, err := Fingerprint(Config{Root: "testdata/host", NumCPU: func() int { return 112 }})
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	wantCPU := structs.NodeCpuResources{CpuShares: 112 * 3800, TotalCpuCores: 112}
	if h.CPU != wantCPU {
		t.Errorf("CPU = %+v, want %+v", h.CPU, wantCPU)
	}
	if want := int64(2113389396 / 1024); h.Memory.MemoryMB != want {
		t.Errorf("MemoryMB = %d, want %d", h.Memory.MemoryMB, want)
	}
	want := map[string]string{
		AttrKernelName:    "linux",
		AttrKernelVersion: "6.8.0-45-generic",
		AttrOSName:        "ubuntu",
		AttrOSVersion:     "22.04",
		AttrCPUArch:       runtime.GOARCH,
		AttrCPUNumCores:   "112",
		AttrCPUFrequency:  "3800",
		AttrCPUTotal:      strconv.Itoa(112 * 3800),
		AttrCPUModel:      "Intel(R) Xeon(R) Platinum 8480+ @ 2.00GHz",
		AttrHostname:      "gpu-node-7",
		AttrMemoryTotal:   strconv.FormatUint(2113389396*1024, 10),
		AttrVersion:       structs.Version,
	}
	for k, v := range want {
		if got := h.Attributes[k]; got != v {
			t.Errorf("attribute %s = %q, want %q", k, got, v)
		}
	}
	if len(h.Attributes) != len(want) {
		t.Errorf("attributes = %v, want exactly %v", h.Attributes, want)
	}
}

func TestFingerprintFallbacks(t *testing.T) {
	// A root with only meminfo: CPU speed and OS fall back to defaults.
	root := t.TempDir()
	writeFile(t, root, "proc/meminfo", "MemTotal: 2097152 kB\n")
	h, err := Fingerprint(Config{Root: root, NumCPU: func() int { return 4 }})
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	if h.CPU.CpuShares != 4*DefaultMHz {
		t.Errorf("CpuShares = %d, want %d", h.CPU.CpuShares, 4*DefaultMHz)
	}
	if h.Memory.MemoryMB != 2048 {
		t.Errorf("MemoryMB = %d, want 2048", h.Memory.MemoryMB)
	}
	if got := h.Attributes[AttrKernelName]; got != runtime.GOOS {
		t.Errorf("kernel.name = %q, want %q", got, runtime.GOOS)
	}
}

func TestFingerprintNeedsMemory(t *testing.T) {
	if _, err := Fingerprint(Config{Root: t.TempDir()}); err == nil {
		t.Error("Fingerprint of a root without meminfo succeeded, want an error")
	}
}

func TestFingerprintRealHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	h, err := Fingerprint(Config{})
	if err != nil {
		t.Fatalf("Fingerprint: %v", err)
	}
	if h.Memory.MemoryMB <= 0 || h.CPU.CpuShares <= 0 || int(h.CPU.TotalCpuCores) != runtime.NumCPU() {
		t.Errorf("host = %+v, want memory, compute and %d cores", h, runtime.NumCPU())
	}
	for _, k := range []string{AttrKernelName, AttrKernelVersion, AttrOSName, AttrHostname} {
		if h.Attributes[k] == "" {
			t.Errorf("attribute %s is empty", k)
		}
	}
}
