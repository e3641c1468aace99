//go:build linux

package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/hostexec"
)

// liveInit reports whether the init the handle names still runs.
func liveInit(h *drivers.TaskHandle) bool {
	pid, _ := strconv.Atoi(h.State[statePID])
	start, _ := strconv.ParseUint(h.State[stateInitStart], 10, 64)
	s, ok := hostexec.ProcStart(pid)
	return ok && s == start
}

// cgroupGone reports whether every dir of the handle's cgroup is gone.
func cgroupGone(h *drivers.TaskHandle) bool {
	for _, d := range strings.Split(h.State[stateCgroups], ":") {
		if _, err := os.Stat(d); err == nil {
			return false
		}
	}
	return true
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRecoverAfterDriverLoss: a task outlives the driver that started
// it (a new Driver is a new agent); the new driver re-attaches from the
// handle, sees it running, stops it with a signal the command traps and
// gets the exit code the command chose; Destroy removes the cgroup and
// the task's files.
func TestRecoverAfterDriverLoss(t *testing.T) {
	requireIsolation(t)
	old := New(nil, Config{})
	cfg := shTask(t, `trap 'exit 7' TERM; echo up; while :; do sleep 0.05; done`, nil)
	h, err := old.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitForFile(t, cfg.StdoutPath, "up")
	if h.State[stateCgroups] == "" || h.State[stateInitStart] == "" {
		t.Fatalf("handle state %v lacks the cgroup or the init's start", h.State)
	}
	// The old agent is gone without stopping anything: drop its driver.
	d := New(nil, Config{})
	if err := d.RecoverTask(h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	t.Cleanup(func() { _ = d.Destroy(h.ID) })
	if !liveInit(h) {
		t.Fatal("task not running after recovery")
	}
	if err := d.RecoverTask(h); !errors.Is(err, drivers.ErrTaskExists) {
		t.Errorf("second RecoverTask = %v, want ErrTaskExists", err)
	}
	if err := d.Stop(h.ID, 10*time.Second, "SIGTERM"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	res := waitResult(t, d, h.ID)
	if res.ExitCode != 7 || res.Err != nil {
		t.Errorf("result %v, want exit code 7 from the trap", res)
	}
	if err := d.Destroy(h.ID); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if !cgroupGone(h) {
		t.Errorf("cgroup %s left after Destroy", h.State[stateCgroups])
	}
	for _, f := range []string{h.State[stateStatusFile], h.State[statePIDFile]} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left after Destroy", f)
		}
	}
}

// TestRecoverTaskThatEnded: a task that exits while no agent runs
// leaves its exit status; the new driver delivers it at once.
func TestRecoverTaskThatEnded(t *testing.T) {
	requireIsolation(t)
	old := New(nil, Config{})
	cfg := shTask(t, `sleep 0.3; exit 3`, nil)
	h, err := old.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitCond(t, "task init to end", func() bool { return !liveInit(h) })
	d := New(nil, Config{})
	if err := d.RecoverTask(h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	if res := waitResult(t, d, h.ID); res.ExitCode != 3 {
		t.Errorf("result %v, want exit code 3", res)
	}
	if err := d.Destroy(h.ID); err != nil {
		t.Fatal(err)
	}
	if !cgroupGone(h) {
		t.Errorf("cgroup left after Destroy")
	}
	_ = old // its wait goroutine saw the same end
}

// TestRecoverKillDestroys: Destroy of a recovered task kills every
// process of its cgroup, the result says SIGKILL.
func TestRecoverKillDestroys(t *testing.T) {
	requireIsolation(t)
	old := New(nil, Config{})
	cfg := shTask(t, `trap '' TERM; sleep 600 & echo up; wait`, nil)
	h, err := old.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitForFile(t, cfg.StdoutPath, "up")
	g := &taskCgroup{dirs: strings.Split(h.State[stateCgroups], ":")}
	g.unified = len(g.dirs) == 1
	if n := len(g.procs()); n < 3 {
		t.Fatalf("cgroup holds %d processes, want init, sh and sleep", n)
	}
	d := New(nil, Config{})
	if err := d.RecoverTask(h); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(h.ID, 50*time.Millisecond, "SIGTERM"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if res := waitResult(t, d, h.ID); res.Signal != 9 {
		t.Errorf("result %v, want killed by SIGKILL after the ignored SIGTERM", res)
	}
	if err := d.Destroy(h.ID); err != nil {
		t.Fatal(err)
	}
	if !cgroupGone(h) || liveInit(h) {
		t.Errorf("task left: cgroup gone %v, init alive %v", cgroupGone(h), liveInit(h))
	}
}

// TestRecoverLostAndKillTask: a handle whose init is gone cannot be
// recovered (ErrTaskNotFound); KillTask with a handle whose init was
// replaced kills what is in its cgroup and removes it.
func TestRecoverLostAndKillTask(t *testing.T) {
	requireIsolation(t)
	old := New(nil, Config{})
	cfg := shTask(t, `echo up; exec sleep 600`, nil)
	h, err := old.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitForFile(t, cfg.StdoutPath, "up")
	// A handle naming the same cgroup but an init start time that is not
	// the init's: as after PID reuse, RecoverTask must not take it.
	bad := *h
	bad.State = map[string]string{}
	for k, v := range h.State {
		bad.State[k] = v
	}
	bad.State[stateInitStart] = "1"
	d := New(nil, Config{})
	if err := d.RecoverTask(&bad); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("RecoverTask of a replaced init = %v, want ErrTaskNotFound", err)
	}
	otherBoot := *h
	otherBoot.State = map[string]string{}
	for k, v := range h.State {
		otherBoot.State[k] = v
	}
	otherBoot.State[stateBootID] = "another-boot"
	if err := d.RecoverTask(&otherBoot); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("RecoverTask of a handle of another boot = %v, want ErrTaskNotFound", err)
	}
	if !liveInit(h) {
		t.Fatal("a failed RecoverTask killed the task")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.KillTask(ctx, &bad); err != nil {
		t.Fatalf("KillTask: %v", err)
	}
	if liveInit(h) || !cgroupGone(h) {
		t.Errorf("after KillTask: init alive %v, cgroup gone %v", liveInit(h), cgroupGone(h))
	}
	if err := d.KillTask(ctx, &bad); err != nil {
		t.Errorf("KillTask of a task already gone = %v, want nil", err)
	}
	// A handle naming a cgroup that is not a task's of this driver.
	evil := *h
	evil.State = map[string]string{statePID: "2", stateInitStart: "1", stateStatusFile: "/x", stateCgroups: DefaultCgroupRoot}
	if err := d.KillTask(ctx, &evil); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("KillTask of a foreign cgroup = %v, want ErrInvalidConfig", err)
	}
}

// TestKillOrphans: with no handle at all, KillOrphans finds the task
// through the driver's pid file under the alloc dirs, spares the kept
// task IDs, and kills the rest through their cgroups.
func TestKillOrphans(t *testing.T) {
	requireIsolation(t)
	old := New(nil, Config{})
	orphan := shTask(t, `echo up; exec sleep 600`, nil)
	kept := shTask(t, `echo up; exec sleep 600`, nil)
	kept.ID += "-kept"
	ho, err := old.Start(context.Background(), orphan)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := old.Start(context.Background(), kept)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Destroy(kept.ID) })
	waitForFile(t, orphan.StdoutPath, "up")
	waitForFile(t, kept.StdoutPath, "up")
	d := New(nil, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Each task's alloc dir is its task dir's parent; their parent (the
	// test's temp dir) is the alloc root of both.
	root := filepath.Dir(filepath.Dir(orphan.TaskDir))
	if filepath.Dir(filepath.Dir(kept.TaskDir)) != root {
		t.Fatalf("tasks under different roots")
	}
	killed, err := d.KillOrphans(ctx, root, map[string]bool{kept.ID: true})
	if err != nil {
		t.Fatalf("KillOrphans: %v", err)
	}
	if len(killed) != 1 || killed[0] != orphan.ID {
		t.Errorf("killed %v, want [%s]", killed, orphan.ID)
	}
	if liveInit(ho) || !cgroupGone(ho) {
		t.Errorf("orphan: init alive %v, cgroup gone %v", liveInit(ho), cgroupGone(ho))
	}
	for _, f := range []string{ho.State[statePIDFile], ho.State[stateExecSocket]} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("orphan's %s left", f)
		}
	}
	if _, err := os.Stat(hk.State[stateExecSocket]); err != nil {
		t.Errorf("kept task's exec socket: %v", err)
	}
	if !liveInit(hk) {
		t.Errorf("kept task killed")
	}
}

// agentEnv makes the test binary act as an agent (runAgent): the test
// kills it with SIGKILL while its task runs.
const agentEnv = "EXEC_TEST_AGENT"

// runAgent starts the task whose config arrives as JSON on stdin with a
// driver of its own, writes the handle as JSON on stdout and waits to
// be killed.
func runAgent() int {
	var cfg drivers.TaskConfig
	if err := json.NewDecoder(os.Stdin).Decode(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	h, err := New(nil, Config{}).Start(context.Background(), &cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(h); err != nil {
		return 1
	}
	select {}
}

// TestRecoverAfterAgentKill9: an agent process that started a task is
// killed with SIGKILL. The task runs on; a new driver (here, the test)
// re-attaches from the handle, the task's output keeps flowing, an exec
// session runs inside the task's isolation (through the init's exec
// socket), a signal reaches the task and its exit code, chosen by the
// command, is seen.
func TestRecoverAfterAgentKill9(t *testing.T) {
	requireIsolation(t)
	const probe = `cat /proc/self/cgroup; readlink /proc/self/ns/pid /proc/self/ns/mnt; id -u`
	cfg := shTask(t, `trap 'echo bye; exit 9' USR1; (`+probe+`) > task.view; echo up; while :; do echo tick; sleep 0.05; done`, nil)
	in, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	agent := osexec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), agentEnv+"=1")
	agent.Stdin = bytes.NewReader(in)
	agent.Stderr = os.Stderr
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	var h drivers.TaskHandle
	if err := json.NewDecoder(out).Decode(&h); err != nil {
		_ = agent.Process.Kill()
		_ = agent.Wait()
		t.Fatalf("agent's handle: %v", err)
	}
	d := New(nil, Config{})
	t.Cleanup(func() {
		if d.Destroy(h.ID) != nil { // not recovered: kill it by its handle
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = d.KillTask(ctx, &h)
		}
	})
	waitForFile(t, cfg.StdoutPath, "up")
	if err := agent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait()
	if !liveInit(&h) {
		t.Fatal("task died with its agent")
	}
	if err := d.RecoverTask(&h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	// Output still flows with no agent reading the init's pipes.
	ticks := strings.Count(readFile(t, cfg.StdoutPath), "tick")
	waitCond(t, "more output after the agent died", func() bool { return strings.Count(readFile(t, cfg.StdoutPath), "tick") > ticks+2 })
	// The control socket pair died with the agent; the init's exec
	// socket, root's only, takes the session into the task.
	if fi, err := os.Stat(h.State[stateExecSocket]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("exec socket %s: %v, mode %v, want 0600", h.State[stateExecSocket], err, fi.Mode())
	}
	if got, want := execIn(t, d, h.ID, 0, "/bin/sh", "-c", probe), readFile(t, filepath.Join(cfg.TaskDir, "task.view")); got != want {
		t.Errorf("exec'd command's cgroup, namespaces, uid:\n%s\nwant the task's:\n%s", got, want)
	}
	if err := d.Signal(h.ID, "SIGUSR1"); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if res := waitResult(t, d, h.ID); res.ExitCode != 9 || res.Err != nil {
		t.Errorf("result %v, want exit code 9", res)
	}
	waitForFile(t, cfg.StdoutPath, "bye")
	if err := d.Destroy(h.ID); err != nil {
		t.Fatal(err)
	}
	if !cgroupGone(&h) {
		t.Error("cgroup left after Destroy")
	}
	if _, err := os.Stat(h.State[stateExecSocket]); err == nil {
		t.Error("exec socket left after Destroy")
	}
}

// TestKillTaskLegacyHandle: a handle written before re-attach existed
// (pid, memory cgroup dir, isolation: no init start time, no status
// file) cannot be re-attached, but KillTask still kills the task through
// its cgroup; one naming a cgroup not of this driver is refused.
func TestKillTaskLegacyHandle(t *testing.T) {
	requireIsolation(t)
	old := New(nil, Config{})
	cfg := shTask(t, `echo up; exec sleep 600`, nil)
	h, err := old.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitForFile(t, cfg.StdoutPath, "up")
	dirs := strings.Split(h.State[stateCgroups], ":")
	legacy := *h
	legacy.State = map[string]string{statePID: h.State[statePID], legacyCgroupKey: dirs[len(dirs)-1], stateIsolation: "on"}
	d := New(nil, Config{})
	if err := d.RecoverTask(&legacy); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Fatalf("RecoverTask of a legacy handle = %v, want ErrInvalidConfig", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.KillTask(ctx, &legacy); err != nil {
		t.Fatalf("KillTask of a legacy handle: %v", err)
	}
	if liveInit(h) || !cgroupGone(h) {
		t.Errorf("after KillTask: init alive %v, cgroup gone %v", liveInit(h), cgroupGone(h))
	}
	foreign := legacy
	foreign.State = map[string]string{statePID: "2", legacyCgroupKey: DefaultCgroupRoot}
	if err := d.KillTask(ctx, &foreign); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("KillTask of a legacy handle naming a foreign cgroup = %v, want ErrInvalidConfig", err)
	}
}

// TestExecSocketLongDir: an exec socket whose path in the alloc dir
// would be too long goes in a private (0700) dir of its own in the temp
// dir, which goes with it.
func TestExecSocketLongDir(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	ln, err := newExecListener(long)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.file.Close()
	dir := filepath.Dir(ln.path)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || filepath.Dir(dir) != filepath.Clean(os.TempDir()) {
		t.Fatalf("socket %s in %v (%v), want a 0700 dir of its own in the temp dir", ln.path, fi, err)
	}
	if !isExecSocket(ln.path) {
		t.Errorf("%s is not recognised as an exec socket", ln.path)
	}
	removeExecSocket(ln.path)
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("private dir after removal: %v, want gone", err)
	}
}
