//go:build linux

package exec

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// cgroupV2Root is where a cgroup v2 hierarchy is mounted here: the
// unified root, or a hybrid host's /sys/fs/cgroup/unified.
func cgroupV2Root(t *testing.T) string {
	t.Helper()
	for _, p := range []string{DefaultCgroupRoot, filepath.Join(DefaultCgroupRoot, "unified")} {
		if fsType(p) == cgroupV2Magic {
			return p
		}
	}
	t.Skip("no cgroup v2 hierarchy mounted")
	return ""
}

// TestDeviceProgram: the eBPF device filter attached to a v2 cgroup lets
// a process in it open the devices the rules admit and nothing else.
func TestDeviceProgram(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := filepath.Join(cgroupV2Root(t), "drover-devtest-"+strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeCgroupDir(dir) })
	if err := attachV2Devices(dir, []deviceRule{{1, 3, "rw"}, {1, 9, "r"}}); err != nil {
		t.Fatalf("attach: %v", err)
	}
	cg, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	script := `echo x > /dev/null && echo null-write; head -c1 /dev/urandom >/dev/null && echo urandom-read
{ echo x > /dev/urandom; } 2>/dev/null || echo urandom-write-denied; head -c1 /dev/zero >/dev/null 2>&1 || echo zero-denied`
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run in cgroup: %v: %s", err, out)
	}
	if got, want := string(out), "null-write\nurandom-read\nurandom-write-denied\nzero-denied\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

// TestDeviceProgramManyRules: a task's rules with several GPUs (each
// GPU's node, the control and UVM nodes) load; a verifier log that
// outgrew its buffer once failed such a load on a GPU host.
func TestDeviceProgramManyRules(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := filepath.Join(cgroupV2Root(t), "drover-devtest-"+strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeCgroupDir(dir) })
	rules := []deviceRule{{1, 3, "rwm"}, {1, 5, "rwm"}, {1, 7, "rwm"}, {1, 8, "rwm"}, {1, 9, "rwm"}, {5, 0, "rwm"}, {5, 2, "rwm"}, {136, -1, "rwm"}}
	for gpu := range 8 {
		rules = append(rules, deviceRule{195, int64(gpu), "rw"})
	}
	rules = append(rules, deviceRule{195, 255, "rw"}, deviceRule{235, -1, "rw"}, deviceRule{511, 0, "rw"}, deviceRule{511, 1, "rw"})
	if err := attachV2Devices(dir, rules); err != nil {
		t.Fatalf("attach %d rules: %v", len(rules), err)
	}
}

func TestDeviceRuleString(t *testing.T) {
	tests := []struct {
		rule deviceRule
		want string
	}{
		{deviceRule{1, 3, "rwm"}, "c 1:3 rwm"},
		{deviceRule{136, -1, "rwm"}, "c 136:* rwm"},
		{deviceRule{195, 0, "rw"}, "c 195:0 rw"},
	}
	for _, tt := range tests {
		if got := tt.rule.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestReadGPUInformation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "information")
	const info = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-5c6a8d5e-0d6f-4f8a-9a4e-1c2b3d4e5f60\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t 0000:18:00.0\nDevice Minor: \t 3\nGPU Firmware: \t 550.54.15\n"
	if err := os.WriteFile(path, []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	uuid, minor, ok := readGPUInformation(path)
	if !ok || uuid != "GPU-5c6a8d5e-0d6f-4f8a-9a4e-1c2b3d4e5f60" || minor != 3 {
		t.Errorf("readGPUInformation = %q, %d, %v; want the UUID, minor 3, true", uuid, minor, ok)
	}
	if gpus := gpuDevices([]string{"GPU-simulated-0"}); gpus != nil {
		t.Errorf("gpuDevices of a simulated GPU = %v, want none", gpus)
	}
}
