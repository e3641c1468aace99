//go:build linux

package exec

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostGPU returns the UUID and minor of one NVIDIA GPU of this host, or
// skips.
func hostGPU(t *testing.T) (string, int) {
	t.Helper()
	infos, _ := filepath.Glob(filepath.Join(nvidiaProcDir, "*", "information"))
	for _, p := range infos {
		if uuid, minor, ok := readGPUInformation(p); ok {
			return uuid, minor
		}
	}
	t.Skip("no NVIDIA GPU on this host")
	return "", 0
}

// TestGPUDevices: an isolated task sees and may open the device nodes
// of its assigned GPU (and the shared ones), and a task without GPUs
// sees none and may not make one.
func TestGPUDevices(t *testing.T) {
	uuid, minor := hostGPU(t)
	requireIsolation(t)
	d := New(nil, Config{})
	t.Logf("fingerprint: %s", d.Fingerprint(t.Context()).HealthDescription)
	node := fmt.Sprintf("/dev/nvidia%d", minor)

	// nvidia-smi where the default chroot env shows it (/usr/bin, or
	// /usr/local/nvidia/bin as on some GPU hosts).
	smi := "true"
	if p, err := exec.LookPath("nvidia-smi"); err == nil && strings.HasPrefix(p, "/usr/") {
		smi = p + " -L"
	}
	with := runScriptWithGPUs(t, d, "", []string{uuid}, `ls /dev | grep nvidia | tr '\n' ' '; echo; head -c0 `+node+` && echo opened; `+smi)
	if !strings.Contains(with, strings.TrimPrefix(node, "/dev/")+" ") || !strings.Contains(with, "nvidiactl") || !strings.Contains(with, "opened") {
		t.Errorf("task with GPU %s: output %q, want %s and nvidiactl listed and opened", uuid, with, node)
	}
	if smi != "true" && !strings.Contains(with, uuid) {
		t.Errorf("task with GPU %s: nvidia-smi -L = %q, want its GPU", uuid, with)
	}
	without := runScriptWithGPUs(t, d, "root", nil, fmt.Sprintf(`ls /dev | grep -c nvidia; mknod gpu c 195 %d && { head -c0 gpu 2>/dev/null || echo denied; }`, minor))
	if without != "0\ndenied\n" && without != "0\n" {
		t.Errorf("task without GPUs: output %q, want no nvidia nodes and no way to one", without)
	}
}

func runScriptWithGPUs(t *testing.T, d *Driver, user string, ids []string, script string) string {
	t.Helper()
	cfg := shTask(t, script, nil)
	cfg.ID = fmt.Sprintf("%s-%d", cfg.ID, len(ids)) // with and without GPUs: two tasks
	cfg.User, cfg.DeviceIDs = user, ids
	startTask(t, d, cfg)
	res := waitResult(t, d, cfg.ID)
	out := readFile(t, cfg.StdoutPath)
	t.Logf("result %v, stdout %q, stderr %q", res, out, readFile(t, cfg.StderrPath))
	return out
}
