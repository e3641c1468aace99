//go:build linux

package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/structs"
)

func TestOOMKilled(t *testing.T) {
	requireIsolation(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		hogMB   int
		wantSig int
		wantOOM bool
	}{
		{"within limit", 8, 0, false},
		{"over limit", 256, int(syscall.SIGKILL), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(nil, withTestBinary(t))
			cfg := shTask(t, "", &structs.AllocatedTaskResources{Memory: structs.AllocatedMemoryResources{MemoryMB: 96}})
			cfg.Config = map[string]any{"command": exe}
			cfg.Env = map[string]string{hogEnv: strconv.Itoa(tt.hogMB)}
			startTask(t, d, cfg)
			res := waitResult(t, d, cfg.ID)
			if res.Signal != tt.wantSig || res.OOMKilled != tt.wantOOM {
				t.Errorf("result = %+v, want signal %d, OOMKilled %v (stderr %q)", res, tt.wantSig, tt.wantOOM, readFile(t, cfg.StderrPath))
			}
		})
	}
}

// taskCgroupDirs reads the cgroup paths of a task's shell from the
// "cgroup:" lines it printed (its /proc/self/cgroup) and returns the
// host directories of its memory and cpu cgroups.
func taskCgroupDirs(t *testing.T, out string, cg cgroupFS) (memDir, cpuDir string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls := "," + parts[1] + ","
		switch {
		case cg.unified && parts[0] == "0":
			d := filepath.Join(cg.root, parts[2])
			return d, d
		case strings.Contains(ctrls, ",memory,"):
			memDir = filepath.Join(cg.root, "memory", parts[2])
		case strings.Contains(ctrls, ",cpu,"):
			cpuDir = filepath.Join(cg.root, "cpu", parts[2])
		}
	}
	if memDir == "" || cpuDir == "" {
		t.Fatalf("no memory/cpu cgroup in the task's /proc/self/cgroup: %q", out)
	}
	return memDir, cpuDir
}

func TestCgroupLimitsVisible(t *testing.T) {
	requireIsolation(t)
	cg, err := detectCgroups(DefaultCgroupRoot)
	if err != nil {
		t.Fatal(err)
	}
	d := New(nil, Config{})
	res := &structs.AllocatedTaskResources{
		Cpu:    structs.AllocatedCpuResources{CpuShares: 512},
		Memory: structs.AllocatedMemoryResources{MemoryMB: 48},
	}
	cfg := shTask(t, "cat /proc/self/cgroup; echo ready; exec sleep 30", res)
	startTask(t, d, cfg)
	memDir, cpuDir := taskCgroupDirs(t, waitForFile(t, cfg.StdoutPath, "ready"), cg)
	if !strings.Contains(memDir, "/"+cgroupParent+"/") {
		t.Errorf("task's memory cgroup = %s, want one under %q", memDir, cgroupParent)
	}
	files := map[string]string{ // path -> want
		filepath.Join(memDir, "memory.limit_in_bytes"): strconv.Itoa(48 << 20),
		filepath.Join(cpuDir, "cpu.shares"):            "512",
	}
	if cg.unified {
		files = map[string]string{
			filepath.Join(memDir, "memory.max"): strconv.Itoa(48 << 20),
			filepath.Join(cpuDir, "cpu.weight"): strconv.FormatInt(sharesToWeight(512), 10),
		}
	}
	for path, want := range files {
		if got := strings.TrimSpace(readFile(t, path)); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if err := d.Destroy(cfg.ID); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	for _, dir := range []string{memDir, cpuDir} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("cgroup %s after Destroy: stat err = %v, want not exist", dir, err)
		}
	}
}

func TestPIDNamespace(t *testing.T) {
	requireIsolation(t)
	d := New(nil, Config{})
	cfg := shTask(t, `echo "pid=$$"; echo "init=$(tr '\0' ' ' </proc/1/cmdline)"; echo "procs=$(ls -d /proc/[0-9]* | wc -l)"`, nil)
	startTask(t, d, cfg)
	if res := waitResult(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, want success; stderr %q", res, readFile(t, cfg.StderrPath))
	}
	out := readFile(t, cfg.StdoutPath)
	if !strings.Contains(out, "init=drover-exec-init /bin/sh") {
		t.Errorf("stdout = %q, want PID 1 to be the driver's init", out)
	}
	// The init's runtime threads take the first few PIDs of the namespace.
	var pid, procs int
	if _, err := fmt.Sscanf(out, "pid=%d", &pid); err != nil || pid < 2 || pid > 64 {
		t.Errorf("task's own pid = %d (%v), want a small pid of a fresh namespace", pid, err)
	}
	// init, sh, the ls subshell and ls itself at most: no host processes.
	if _, err := fmt.Sscanf(out[strings.LastIndex(out, "procs=")+len("procs="):], "%d", &procs); err != nil || procs > 5 {
		t.Errorf("task sees %d processes in /proc (%v), want its own few", procs, err)
	}
}

func TestMountNamespacePrivate(t *testing.T) {
	requireIsolation(t)
	d := New(nil, Config{})
	cfg := shTask(t, `mkdir m && mount -t tmpfs none m && touch m/inside && ls m`, nil)
	cfg.User = "root" // to mount
	startTask(t, d, cfg)
	if res := waitResult(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, want success; stderr %q", res, readFile(t, cfg.StderrPath))
	}
	if got := readFile(t, cfg.StdoutPath); got != "inside\n" {
		t.Errorf("stdout = %q, want the file made on the task's tmpfs", got)
	}
	if _, err := os.Stat(filepath.Join(cfg.TaskDir, "m", "inside")); !os.IsNotExist(err) {
		t.Errorf("host sees the task's mount: stat err = %v, want not exist", err)
	}
}

// cgroupPIDs lists the host PIDs in the cgroup directory dir.
func cgroupPIDs(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(readFile(t, filepath.Join(dir, "cgroup.procs"))) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func TestDestroyKillsNamespace(t *testing.T) {
	requireIsolation(t)
	d := New(nil, Config{})
	// The child leaves the task's process group: only the namespace and
	// the cgroup still hold it.
	cfg := shTask(t, `setsid sleep 300 & echo ready; wait`, nil)
	h := startTask(t, d, cfg)
	waitForFile(t, cfg.StdoutPath, "ready")
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(pids) < 3 && time.Now().Before(deadline) { // init, sh, sleep
		pids = cgroupPIDs(t, h.State["cgroup"])
		time.Sleep(10 * time.Millisecond)
	}
	if len(pids) < 3 {
		t.Fatalf("cgroup holds pids %v, want init, sh and sleep", pids)
	}
	if err := d.Destroy(cfg.ID); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil && !isZombie(pid) {
			t.Errorf("pid %d of the destroyed task still runs", pid)
		}
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestFallbackSaysIsolationOff(t *testing.T) {
	requireIsolation(t)
	root := readOnlyCgroups(t)
	d := New(nil, Config{AllowFallback: true, CgroupRoot: root})
	info := d.Fingerprint(context.Background())
	if !info.Healthy || !strings.Contains(info.HealthDescription, "isolation off") {
		t.Errorf("Fingerprint = %+v, want healthy with isolation off", info)
	}
	cfg := shTask(t, `tr '\0' ' ' </proc/1/cmdline`, &structs.AllocatedTaskResources{Memory: structs.AllocatedMemoryResources{MemoryMB: 16}})
	h := startTask(t, d, cfg)
	if got := h.State["isolation"]; !strings.HasPrefix(got, "off: cgroups not writable at "+root) {
		t.Errorf("handle isolation = %q, want off with the reason", got)
	}
	if res := waitResult(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("result = %v, want success", res)
	}
	if out := readFile(t, cfg.StdoutPath); strings.Contains(out, "drover-exec-init") {
		t.Errorf("PID 1 is %q: the fallback task ran in a PID namespace", out)
	}
}

func TestIsolationUnavailable(t *testing.T) {
	requireIsolation(t)
	plain := t.TempDir()
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		root   string
		reason string
	}{
		{"read-only cgroupfs", readOnlyCgroups(t), "read-only file system"},
		{"not a cgroupfs", plain, "is not a cgroup filesystem"},
		{"not a directory", notDir, "is not a cgroup filesystem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(nil, Config{CgroupRoot: tt.root})
			info := d.Fingerprint(context.Background())
			wantDesc := "exec: cgroups not writable at " + tt.root + ": "
			if info.Healthy || !info.Detected || !strings.HasPrefix(info.HealthDescription, wantDesc) ||
				!strings.Contains(info.HealthDescription, tt.reason) || !strings.HasSuffix(info.HealthDescription, "; set allow fallback") {
				t.Errorf("Fingerprint = %+v, want unhealthy, %q...%q...; set allow fallback", info, wantDesc, tt.reason)
			}
			cfg := shTask(t, "exit 0", nil)
			_, err := d.Start(context.Background(), cfg)
			if err == nil || !strings.HasPrefix(err.Error(), "exec driver: isolation unavailable: cgroups not writable at "+tt.root) {
				t.Errorf("Start error = %v, want \"exec driver: isolation unavailable: cgroups not writable at %s...\"", err, tt.root)
			}
			if _, err := d.Wait(context.Background(), cfg.ID); err == nil {
				t.Error("a task that was refused is known to the driver")
			}
		})
	}
}

func TestSharesToWeight(t *testing.T) {
	tests := []struct {
		shares, want int64
	}{
		{0, 1}, {2, 1}, {1024, 39}, {262144, 10000}, {1 << 30, 10000},
	}
	for _, tt := range tests {
		t.Run(strconv.FormatInt(tt.shares, 10), func(t *testing.T) {
			if got := sharesToWeight(tt.shares); got != tt.want {
				t.Errorf("sharesToWeight(%d) = %d, want %d", tt.shares, got, tt.want)
			}
		})
	}
}

func TestReportedResult(t *testing.T) {
	tests := []struct {
		line string
		want *drivers.ExitResult
	}{
		{"exit 0", &drivers.ExitResult{}},
		{"exit 42", &drivers.ExitResult{ExitCode: 42}},
		{"signal 15", &drivers.ExitResult{ExitCode: 143, Signal: 15}},
		{"", nil},
		{"started 2", nil},
		{"exit x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got := reportedResult(tt.line)
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("reportedResult(%q) = %+v, want %+v", tt.line, got, tt.want)
			}
		})
	}
}

func TestCgroupName(t *testing.T) {
	got := cgroupName("0b1c/web task/3")
	if !strings.HasPrefix(got, "0b1c_web_task_3-") || strings.ContainsAny(got, "/ ") {
		t.Errorf("cgroupName = %q, want a single safe path element", got)
	}
	if again := cgroupName("0b1c/web task/3"); again == got {
		t.Errorf("cgroupName gave %q twice, want a fresh name per start", got)
	}
}

// TestCgroupFileLayout checks which files each layout writes and how the
// OOM counters are read, on plain directories (this host's kernel may
// not offer both layouts with controllers).
func TestCgroupFileLayout(t *testing.T) {
	tests := []struct {
		name     string
		unified  bool
		oomFiles map[string]string // files under the memory dir -> content
		want     map[string]string // path under root -> content
		wantOOM  int64
		wantSure bool
	}{
		{
			name: "v2", unified: true,
			oomFiles: map[string]string{"memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"},
			want: map[string]string{
				"cgroup.subtree_control":        "+cpu +memory",
				"drover/cgroup.subtree_control": "+cpu +memory",
				"drover/t/cpu.weight":           "39",
				"drover/t/memory.max":           "67108864",
				"drover/t/memory.swap.max":      "0",
			},
			wantOOM: 1, wantSure: true,
		},
		{
			name:     "v1",
			oomFiles: map[string]string{"memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"},
			want: map[string]string{
				"cpu/drover/t/cpu.shares":                     "1024",
				"devices/drover/t/devices.deny":               "a",
				"devices/drover/t/devices.allow":              "c 1:3 rwm",
				"memory/drover/t/memory.limit_in_bytes":       "67108864",
				"memory/drover/t/memory.memsw.limit_in_bytes": "67108864",
			},
			wantOOM: 2, wantSure: true,
		},
		{
			name:     "v1 without oom_kill counter",
			oomFiles: map[string]string{"memory.oom_control": "oom_kill_disable 0\nunder_oom 0\n", "memory.failcnt": "7\n"},
			want:     map[string]string{"cpu/drover/t/cpu.shares": "1024"},
			wantOOM:  7, wantSure: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			lim := limits{cpuShares: 1024, memoryMB: 64}
			if !tt.unified { // v2's filter is an eBPF program: see TestDeviceProgram
				lim.devices = []deviceRule{{1, 3, "rwm"}}
			}
			g, err := cgroupFS{root: root, unified: tt.unified}.create("t", lim)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			for path, want := range tt.want {
				if got := readFile(t, filepath.Join(root, path)); got != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
			for name, text := range tt.oomFiles {
				if err := os.WriteFile(filepath.Join(g.memoryDir(), name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			n, sure, err := g.oomKills()
			if err != nil || n != tt.wantOOM || sure != tt.wantSure {
				t.Errorf("oomKills() = %d, %v, %v; want %d, %v, nil", n, sure, err, tt.wantOOM, tt.wantSure)
			}
		})
	}
}
