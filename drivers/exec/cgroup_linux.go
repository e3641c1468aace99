package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
)

// DefaultCgroupRoot is where the host's cgroup filesystems are mounted.
const DefaultCgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the directory, under the root (v2) or under each
// controller's hierarchy (v1), that holds one cgroup per task.
const cgroupParent = "drover"

// limits is what a task's cgroup enforces; zero means no limit.
type limits struct {
	cpuShares int64 // relative CPU weight, v1 cpu.shares units
	memoryMB  int64
	// memoryLowMB is a soft reservation below memoryMB (a task's memory
	// under memory_max): v2 memory.low, v1 memory.soft_limit_in_bytes.
	memoryLowMB int64
	// devices are the only devices the task may use (devices_linux.go);
	// nil sets no device filter (tests of the other limits do that).
	devices []deviceRule
}

// cgroupFS is one cgroup filesystem layout: v1 (a hierarchy per
// controller) or v2 (one unified tree). The files are written directly:
// containerd/cgroups' cgroup1 and cgroup2 packages need modules this
// tree's go.sum does not carry, so only its Mode detection is used.
type cgroupFS struct {
	root    string
	unified bool
}

// Filesystem magic numbers (statfs f_type) of cgroup v1 and v2.
const (
	cgroupV1Magic = 0x27e0eb
	cgroupV2Magic = 0x63677270
)

// detectCgroups works out the layout under root. The host's default
// root is classified by cgroups.Mode (hybrid hosts count as v1, since
// their controllers live in the v1 hierarchies); any other root (tests)
// by the filesystem type: v2 mounted at root, or v1 hierarchies mounted
// at root/cpu and root/memory.
func detectCgroups(root string) (cgroupFS, error) {
	if root == DefaultCgroupRoot {
		switch cgroups.Mode() {
		case cgroups.Unified:
			return cgroupFS{root: root, unified: true}, nil
		case cgroups.Legacy, cgroups.Hybrid:
			return cgroupFS{root: root}, nil
		default:
			return cgroupFS{}, errors.New("no cgroup filesystem mounted")
		}
	}
	if fsType(root) == cgroupV2Magic {
		return cgroupFS{root: root, unified: true}, nil
	}
	for _, ctrl := range []string{"cpu", "memory", "devices"} {
		if dir := filepath.Join(root, ctrl); fsType(dir) != cgroupV1Magic {
			return cgroupFS{}, fmt.Errorf("%s is not a cgroup filesystem", dir)
		}
	}
	return cgroupFS{root: root}, nil
}

// fsType is the statfs filesystem type of path, 0 when unknown.
func fsType(path string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0
	}
	return int64(st.Type)
}

func (c cgroupFS) version() string {
	if c.unified {
		return "v2"
	}
	return "v1"
}

// taskCgroup is the cgroup of one task: a single directory on v2, one
// per controller (cpu, devices, memory) on v1.
type taskCgroup struct {
	unified bool
	dirs    []string // v1: cpu, devices, then memory dir; v2: the one dir
}

// memoryDir is the directory holding the memory controller's files.
func (g *taskCgroup) memoryDir() string { return g.dirs[len(g.dirs)-1] }

// create makes the task's cgroup named name and applies lim.
func (c cgroupFS) create(name string, lim limits) (*taskCgroup, error) {
	g := &taskCgroup{unified: c.unified}
	if c.unified {
		if err := c.enableV2Controllers(); err != nil {
			return nil, err
		}
		g.dirs = []string{filepath.Join(c.root, cgroupParent, name)}
	} else {
		g.dirs = []string{
			filepath.Join(c.root, "cpu", cgroupParent, name),
			filepath.Join(c.root, "devices", cgroupParent, name),
			filepath.Join(c.root, "memory", cgroupParent, name),
		}
	}
	for _, d := range g.dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			g.remove()
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
	}
	if err := g.apply(lim); err != nil {
		g.remove()
		return nil, err
	}
	return g, nil
}

// enableV2Controllers turns on cpu and memory for the root's and the
// parent's children (v2 only hands a controller to a child whose parent
// lists it in cgroup.subtree_control).
func (c cgroupFS) enableV2Controllers() error {
	parent := filepath.Join(c.root, cgroupParent)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create cgroup parent: %w", err)
	}
	for _, dir := range []string{c.root, parent} {
		if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+cpu +memory"); err != nil {
			return err
		}
	}
	return nil
}

func (g *taskCgroup) apply(lim limits) error {
	if g.unified {
		dir := g.dirs[0]
		if lim.cpuShares > 0 {
			if err := writeFile(filepath.Join(dir, "cpu.weight"), strconv.FormatInt(sharesToWeight(lim.cpuShares), 10)); err != nil {
				return err
			}
		}
		if lim.memoryMB > 0 {
			if err := writeFile(filepath.Join(dir, "memory.max"), strconv.FormatInt(lim.memoryMB<<20, 10)); err != nil {
				return err
			}
			// No swap, so the limit is a real one; absent without swap accounting.
			_ = writeFile(filepath.Join(dir, "memory.swap.max"), "0")
		}
		if lim.memoryLowMB > 0 {
			if err := writeFile(filepath.Join(dir, "memory.low"), strconv.FormatInt(lim.memoryLowMB<<20, 10)); err != nil {
				return err
			}
		}
		if lim.devices == nil {
			return nil
		}
		return attachV2Devices(dir, lim.devices)
	}
	if lim.devices != nil {
		if err := applyV1Devices(g.dirs[1], lim.devices); err != nil {
			return err
		}
	}
	if lim.cpuShares > 0 {
		if err := writeFile(filepath.Join(g.dirs[0], "cpu.shares"), strconv.FormatInt(max(lim.cpuShares, 2), 10)); err != nil {
			return err
		}
	}
	if lim.memoryMB > 0 {
		bytes := strconv.FormatInt(lim.memoryMB<<20, 10)
		if err := writeFile(filepath.Join(g.memoryDir(), "memory.limit_in_bytes"), bytes); err != nil {
			return err
		}
		// memory+swap equal to memory: no swap. Absent without swap accounting.
		_ = writeFile(filepath.Join(g.memoryDir(), "memory.memsw.limit_in_bytes"), bytes)
	}
	if lim.memoryLowMB > 0 {
		if err := writeFile(filepath.Join(g.memoryDir(), "memory.soft_limit_in_bytes"), strconv.FormatInt(lim.memoryLowMB<<20, 10)); err != nil {
			return err
		}
	}
	return nil
}

// sharesToWeight maps v1 cpu.shares [2, 262144] onto v2 cpu.weight
// [1, 10000] linearly.
func sharesToWeight(shares int64) int64 {
	shares = min(max(shares, 2), 262144)
	return 1 + (shares-2)*9999/262142
}

// add moves pid into the cgroup (every controller's directory on v1).
func (g *taskCgroup) add(pid int) error {
	for _, d := range g.dirs {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// oomKills is how many processes of the cgroup the kernel's OOM killer
// has killed: v2 memory.events oom_kill; v1 memory.oom_control oom_kill
// (kernels since 4.13). exact is false when an older v1 kernel only has
// memory.failcnt, which counts hitting the limit rather than kills.
func (g *taskCgroup) oomKills() (n int64, exact bool, err error) {
	file := "memory.oom_control"
	if g.unified {
		file = "memory.events"
	}
	n, found, err := readCounter(filepath.Join(g.memoryDir(), file), "oom_kill")
	if err != nil || found || g.unified {
		return n, true, err
	}
	b, err := os.ReadFile(filepath.Join(g.memoryDir(), "memory.failcnt"))
	if err != nil {
		return 0, false, fmt.Errorf("read oom counter: %w", err)
	}
	n, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, false, err
}

// readCounter reads the "key value" line named key from a flat-keyed
// cgroup file.
func readCounter(path, key string) (n int64, found bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, fmt.Errorf("read oom counter: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, true, err
		}
	}
	return 0, false, sc.Err()
}

// remove kills whatever still runs in the cgroup and removes its
// directories. Removing a directory fails with EBUSY until the killed
// processes are gone, so it retries for a short while.
func (g *taskCgroup) remove() error {
	var errs []error
	for _, d := range g.dirs {
		if err := removeCgroupDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeCgroupDir(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		killProcs(dir)
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killProcs sends SIGKILL to every process listed in the cgroup. The
// processes are in the cgroup, so their PIDs are still theirs.
func killProcs(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func writeFile(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// cgroupName turns a task ID (which may hold "/") into a directory name,
// made unique per start so a reused ID never inherits old counters.
func cgroupName(taskID string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, taskID)
	if len(clean) > 180 {
		clean = clean[:180]
	}
	return fmt.Sprintf("%s-%d", clean, time.Now().UnixNano())
}

// procs lists the PIDs in the cgroup (its memory controller's dir,
// which on v1 holds every process of the task too).
func (g *taskCgroup) procs() []int {
	b, err := os.ReadFile(filepath.Join(g.memoryDir(), "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// kill sends SIGKILL to every process in the cgroup: through
// cgroup.kill where the kernel has it (v2, 5.14+), which also takes
// processes forked meanwhile, else to each PID listed.
func (g *taskCgroup) kill() {
	if g.unified && writeFile(filepath.Join(g.dirs[0], "cgroup.kill"), "1") == nil {
		return
	}
	for _, d := range g.dirs {
		killProcs(d)
	}
}

// removeCtx kills everything in the cgroup, waits until it is empty and
// removes its dirs; a cgroup already gone is fine. It gives up when ctx
// ends.
func (g *taskCgroup) removeCtx(ctx context.Context) error {
	for {
		g.kill()
		var errs []error
		for _, d := range g.dirs {
			err := syscall.Rmdir(d)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
		if len(errs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(append(errs, ctx.Err())...)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
