package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/command/agent"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

// startDevAgent starts a real in-process dev agent (server and client,
// two simulated GPUs) on free loopback ports and returns its address.
func startDevAgent(t *testing.T) string {
	t.Helper()
	return startDevAgentIn(t, drivertest.ReachableTempDir(t))
}

// startDevAgentIn is startDevAgent with dataDir as the agent's data dir.
func startDevAgentIn(t *testing.T, dataDir string) string {
	t.Helper()
	cfg := agent.DevConfig()
	cfg.Ports = &agent.PortsConfig{}
	cfg.DataDir = dataDir
	cfg.LogLevel = "WARN"
	cfg.DevGPUs = 2
	a, err := agent.NewAgent(cfg, io.Discard)
	if err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("agent shutdown: %v", err)
		}
	})
	addr := "http://" + a.HTTPAddr()
	c := apiClient(t, addr)
	eventually(t, 15*time.Second, "a ready node", func() bool {
		nodes, _, err := c.Nodes().List(context.Background(), nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == structs.NodeStatusReady
	})
	return addr
}

func apiClient(t *testing.T, addr string) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: still no %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// batchJob is a batch job of one /bin/true task asking for gpus GPUs
// (none: no device request, as a count of 0 is refused).
func batchJob(id string, gpus int) *structs.Job {
	res := &structs.Resources{CPU: 100, MemoryMB: 64}
	if gpus > 0 {
		res.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(gpus)}}
	}
	return &structs.Job{
		ID: id, Type: structs.JobTypeBatch, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{{
			Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"}, Resources: res,
		}}}},
	}
}

// clusterIDs lists the jobs, allocations (with node and job) and nodes an
// agent knows, sorted.
func clusterIDs(t *testing.T, c *api.Client) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	jobs, _, err := c.Jobs().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		out = append(out, "job "+j.ID)
	}
	allocs, _, err := c.Allocations().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allocs {
		out = append(out, fmt.Sprintf("alloc %s job=%s node=%s", a.ID, a.JobID, a.NodeID))
	}
	nodes, _, err := c.Nodes().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		out = append(out, "node "+n.ID+" "+n.Name)
	}
	slices.Sort(out)
	return out
}

// TestOperatorSnapshot saves a snapshot of one real agent with the CLI,
// refuses damaged copies of it, and restores it into a fresh agent: the
// same jobs, allocations and nodes.
func TestOperatorSnapshot(t *testing.T) {
	src := startDevAgent(t)
	srcAPI := apiClient(t, src)
	for i, gpus := range []int{1, 2, 0} {
		if _, _, err := srcAPI.Jobs().Register(context.Background(), batchJob(fmt.Sprintf("job-%d", i), gpus), nil); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	eventually(t, 15*time.Second, "allocation for each job", func() bool {
		allocs, _, err := srcAPI.Allocations().List(context.Background(), nil)
		return err == nil && len(allocs) >= 3
	})
	want := clusterIDs(t, srcAPI)

	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")
	code, out, errOut := run(t, src, "operator", "snapshot", "save", file)
	if code != 0 || !strings.Contains(out, "State file written to "+file) {
		t.Fatalf("save: exit %d, out %q, err %q", code, out, errOut)
	}
	code, out, errOut = run(t, "", "operator", "snapshot", "inspect", file)
	if code != 0 || !strings.Contains(out, "Checksum") || !strings.Contains(out, "OK") || !strings.Contains(out, "Index") {
		t.Fatalf("inspect: exit %d, out %q, err %q", code, out, errOut)
	}

	dst := startDevAgent(t)
	dstAPI := apiClient(t, dst)
	if _, _, err := dstAPI.Jobs().Register(context.Background(), batchJob("only-on-dst", 0), nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "allocation on dst", func() bool {
		allocs, _, err := dstAPI.Allocations().List(context.Background(), nil)
		return err == nil && len(allocs) == 1
	})
	before := clusterIDs(t, dstAPI)
	refuseDamaged(t, dst, dstAPI, file, before)

	code, out, errOut = run(t, dst, "operator", "snapshot", "restore", file)
	if code != 0 || !strings.Contains(out, "Snapshot restored") {
		t.Fatalf("restore: exit %d, out %q, err %q", code, out, errOut)
	}
	// dst's own client registers its node again once it finds it gone;
	// everything saved must be there, and dst's job must be gone.
	got := clusterIDs(t, dstAPI)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("after restore: missing %q; got\n%s", w, strings.Join(got, "\n"))
		}
	}
	if slices.Contains(got, "job only-on-dst") {
		t.Errorf("after restore: dst's own job survived the restore")
	}
}

// refuseDamaged checks that flipped, truncated and missing files are
// refused with exit 1 and a message, and leave dst's state as it was.
func refuseDamaged(t *testing.T, dst string, dstAPI *api.Client, file string, before []string) {
	t.Helper()
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	flipped := slices.Clone(good)
	flipped[len(flipped)/2] ^= 0x10
	files := map[string][]byte{"flipped": flipped, "truncated": good[:len(good)-100], "empty": nil}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t, dst, "operator", "snapshot", "restore", path)
		if code != 1 || !strings.Contains(errOut, "damaged or truncated") || !strings.Contains(errOut, "Nothing was restored") {
			t.Errorf("restore %s: exit %d, out %q, err %q; want exit 1 saying the file is damaged", name, code, out, errOut)
		}
		code, _, errOut = run(t, "", "operator", "snapshot", "inspect", path)
		if code != 1 || !strings.Contains(errOut, "Checksum FAILED") {
			t.Errorf("inspect %s: exit %d, err %q; want exit 1, Checksum FAILED", name, code, errOut)
		}
	}
	// The server refuses a damaged archive on its own too (a client that
	// does not verify first).
	_, _, err = dstAPI.Operator().SnapshotRestore(context.Background(), strings.NewReader(string(flipped)), nil)
	if api.StatusCode(err) != 400 || !strings.Contains(err.Error(), "damaged or truncated") {
		t.Errorf("API restore of a flipped archive: got %v, want a 400 saying it is damaged", err)
	}
	for _, args := range [][]string{
		{"restore", filepath.Join(dir, "missing")},
		{"restore"},
		{"save"},
		{"save", filepath.Join(dir, "no-such-dir", "x.snap")},
		{"inspect", "a", "b"},
	} {
		code, out, errOut := run(t, dst, append([]string{"operator", "snapshot"}, args...)...)
		if code != 1 || errOut == "" {
			t.Errorf("%v: exit %d, out %q, err %q; want exit 1 with a message", args, code, out, errOut)
		}
	}
	if got := clusterIDs(t, dstAPI); !slices.Equal(got, before) {
		t.Errorf("refused restores changed the state:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
}
