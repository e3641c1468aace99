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
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

// hogEnv makes the test binary, run as a task, allocate and touch that
// many MiB, then exit 0.
const hogEnv = "EXEC_TEST_HOG_MB"

func TestMain(m *testing.M) {
	if mb, ok := os.LookupEnv(hogEnv); ok {
		syscall.Exit(hog(mb)) // not os.Exit: no race-detector exit delay
	}
	if _, ok := os.LookupEnv(agentEnv); ok {
		syscall.Exit(runAgent()) // recover_test.go
	}
	os.Exit(m.Run())
}

func hog(mbStr string) int {
	mb, err := strconv.Atoi(mbStr)
	if err != nil {
		return 2
	}
	var keep [][]byte
	for range mb {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	fmt.Println("allocated", len(keep), "MiB")
	return 0
}

// requireIsolation skips unless this host can isolate tasks (root and
// writable cgroups); with CI=true it fails instead, since CI hosts can.
func requireIsolation(t *testing.T) {
	t.Helper()
	info := New(nil, Config{}).Fingerprint(context.Background())
	if info.Healthy {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("isolation unavailable on a CI host: %s", info.HealthDescription)
	}
	t.Skipf("exec isolation needs root and writable cgroups: %s", info.HealthDescription)
}

// readOnlyCgroups returns a cgroup root whose hierarchies are the host's,
// bind-mounted read-only: a real cgroup filesystem that cannot be written.
func readOnlyCgroups(t *testing.T) string {
	t.Helper()
	cg, err := detectCgroups(DefaultCgroupRoot)
	if err != nil {
		t.Skipf("no cgroups: %v", err)
	}
	root := t.TempDir()
	subs := []string{"cpu", "memory", "devices"}
	if cg.unified {
		subs = []string{""}
	}
	for _, sub := range subs {
		src, dst := filepath.Join(DefaultCgroupRoot, sub), filepath.Join(root, sub)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind %s: %v", src, err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(dst, syscall.MNT_DETACH) })
		if err := syscall.Mount("", dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount %s read-only: %v", dst, err)
		}
	}
	return root
}

func TestConformanceIsolated(t *testing.T) {
	requireIsolation(t)
	// drivertest's DestroyKillsGroup checks the PID a task prints against
	// the host's /proc; in a PID namespace that PID means something else
	// on the host. TestDestroyKillsNamespace covers it for isolated tasks.
	drivertest.Run(t, func() drivers.Driver { return New(nil, Config{}) },
		drivertest.Skip("DestroyKillsGroup", "host PIDs mean nothing in the task's PID namespace; see TestDestroyKillsNamespace"))
}

func TestConformanceFallback(t *testing.T) {
	requireIsolation(t)
	root := readOnlyCgroups(t)
	drivertest.Run(t, func() drivers.Driver { return New(nil, Config{AllowFallback: true, CgroupRoot: root}) })
}

// shTask is a task running script under /bin/sh in a fresh task dir.
func shTask(t *testing.T, script string, res *structs.AllocatedTaskResources) *drivers.TaskConfig {
	t.Helper()
	dir := drivertest.ReachableTempDir(t)
	taskDir := filepath.Join(dir, "task")
	if err := os.Mkdir(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &drivers.TaskConfig{
		ID:         "alloc/" + strings.ReplaceAll(t.Name(), "/", "-") + "/0",
		Config:     map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
		TaskDir:    taskDir,
		StdoutPath: filepath.Join(dir, "stdout"),
		StderrPath: filepath.Join(dir, "stderr"),
		Resources:  res,
	}
}

// withTestBinary is a driver config whose tasks see this test binary
// (at its host path) besides the default chroot env, to run it as a
// task.
func withTestBinary(t *testing.T) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := DefaultChrootEnv()
	env[exe] = exe
	return Config{ChrootEnv: env}
}

func startTask(t *testing.T, d *Driver, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Destroy(cfg.ID) })
	return h
}

func waitResult(t *testing.T, d *Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := d.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	res, ok := <-ch
	if !ok {
		t.Fatal("no exit result in time")
	}
	return res
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitForFile polls until path contains want.
func waitForFile(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q; got %q", path, want, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
