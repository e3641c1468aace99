package exec

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// initPath is the binary the driver runs as each task's init: itself.
const initPath = "/proc/self/exe"

// isolationFlags are the namespaces an isolated task gets.
const isolationFlags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS

// probeIsolation checks, once per driver, that tasks can be isolated:
// root, a writable cgroup filesystem that takes limits and a device
// filter, and an init that starts as PID 1 in new PID and mount
// namespaces and can build a root and pivot into it. The error says what
// is missing.
func probeIsolation(root string) (cgroupFS, error) {
	if root == "" {
		root = DefaultCgroupRoot
	}
	if uid := os.Geteuid(); uid != 0 {
		return cgroupFS{}, fmt.Errorf("cgroups not writable at %s: running as uid %d, not root", root, uid)
	}
	cg, err := detectCgroups(root)
	if err != nil {
		return cgroupFS{}, fmt.Errorf("cgroups not writable at %s: %w", root, err)
	}
	g, err := cg.create(cgroupName(fmt.Sprintf("probe-%d", os.Getpid())), limits{cpuShares: 1024, memoryMB: 64, devices: standardRules})
	if err != nil {
		return cgroupFS{}, fmt.Errorf("cgroups not writable at %s: %w", root, err)
	}
	if err := g.remove(); err != nil {
		return cgroupFS{}, fmt.Errorf("cgroups not writable at %s: %w", root, err)
	}
	spec, err := newRootSpec(map[string]string{}, "", nil, nil)
	if err != nil {
		return cgroupFS{}, err
	}
	rootVal, err := spec.encode()
	if err != nil {
		return cgroupFS{}, err
	}
	var stderr bytes.Buffer
	cmd := &exec.Cmd{
		Path:        initPath,
		Args:        []string{"drover-exec-probe"},
		Env:         []string{initEnv + "=" + initProbe, rootEnv + "=" + rootVal},
		Stderr:      &stderr,
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: isolationFlags},
	}
	if err := cmd.Run(); err != nil {
		return cgroupFS{}, fmt.Errorf("namespaces unavailable: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return cg, nil
}
