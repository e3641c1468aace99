package command

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/command/agent"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/structs"
)

// readArchive returns the files of a .tar.gz by name, and the one
// directory they all sit in.
func readArchive(t *testing.T, path string) (map[string]string, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(zr)
	files := map[string]string{}
	top := ""
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, top
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		dir, name, _ := strings.Cut(hdr.Name, "/")
		if top != "" && dir != top {
			t.Errorf("%s: file %s outside %s/", path, hdr.Name, top)
		}
		top = dir
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
}

// startACLDevAgent starts a dev agent with ACLs on in dataDir and returns
// its address and management secret.
func startACLDevAgent(t *testing.T, dataDir string) (string, string) {
	t.Helper()
	cfg := agent.DevConfig()
	cfg.Ports = &agent.PortsConfig{}
	cfg.DataDir = dataDir
	cfg.LogLevel = "WARN"
	cfg.DevGPUs = 2
	cfg.ACL = &agent.ACLConfig{Enabled: true}
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
	var mgmt *structs.ACLToken
	eventually(t, 15*time.Second, "ACL bootstrap", func() bool {
		mgmt, _, err = c.ACLTokens().Bootstrap(context.Background(), "", nil)
		return err == nil
	})
	return addr, mgmt.SecretID
}

// TestOperatorDebug: against a real agent with ACLs on and a GPU job
// running, the archive holds the agent's self and members, a snapshot per
// interval (nodes, jobs, allocations, metrics in both formats,
// goroutines, heap) and the log of the capture; and no secret: not the
// management token the CLI used, not another token's, not the node's
// secret ID.
func TestOperatorDebug(t *testing.T) {
	dataDir := drivertest.ReachableTempDir(t)
	addr, mgmt := startACLDevAgent(t, dataDir)
	c, err := api.NewClient(&api.Config{Address: addr, SecretID: mgmt})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	other, _, err := c.ACLTokens().Create(ctx, &structs.ACLToken{Name: "other", Type: structs.ACLManagementToken}, nil)
	if err != nil || other.SecretID == "" {
		t.Fatalf("create token: %+v %v", other, err)
	}
	if _, _, err := c.Jobs().Register(ctx, batchJob("gpu-job", 1), nil); err != nil {
		t.Fatalf("register: %v", err)
	}
	var allocID string
	eventually(t, 15*time.Second, "the job's allocation", func() bool {
		allocs, _, err := c.Allocations().List(ctx, nil)
		if err != nil || len(allocs) == 0 {
			return false
		}
		allocID = allocs[0].ID
		return true
	})
	nodeSecret, err := os.ReadFile(filepath.Join(dataDir, "client", "secret-id"))
	if err != nil || len(strings.TrimSpace(string(nodeSecret))) < 8 {
		t.Fatalf("node secret: %q %v", nodeSecret, err)
	}

	out := t.TempDir()
	code, stdout, stderr := run(t, addr, "operator", "debug", "-token", mgmt, "-duration", "2s", "-interval", "1s", "-log-level", "trace", "-output", out)
	if code != 0 {
		t.Fatalf("operator debug: exit %d: %s %s", code, stdout, stderr)
	}
	archives, _ := filepath.Glob(filepath.Join(out, "drover-debug-*.tar.gz"))
	if len(archives) != 1 || !strings.Contains(stdout, archives[0]) {
		t.Fatalf("archives %v; stdout %q; want one, named in the output", archives, stdout)
	}
	if st, err := os.Stat(archives[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("archive mode: %v %v, want 0600", st.Mode(), err)
	}
	files, top := readArchive(t, archives[0])
	if top+".tar.gz" != filepath.Base(archives[0]) {
		t.Errorf("archive dir %q, want the archive's name", top)
	}
	want := map[string]string{
		"agent-self.json":                `"DevMode":true`,
		"members.json":                   `"Members"`,
		"interval/0000/nodes.json":       `"Status":"ready"`,
		"interval/0000/jobs.json":        `"gpu-job"`,
		"interval/0000/allocations.json": allocID,
		"interval/0000/gpus.json":        `"Total":2`,
		"interval/0000/metrics.json":     `"Gauges"`,
		"interval/0000/metrics.prom":     "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
		"interval/0000/goroutine.txt":    "goroutine ",
		"interval/0000/heap.prof":        "",
		"interval/0001/nodes.json":       `"Status":"ready"`,
		"monitor.log":                    "path=/v1/nodes",
	}
	for name, content := range want {
		got, ok := files[name]
		if !ok || !strings.Contains(got, content) || len(got) == 0 {
			t.Errorf("%s: present %v, %d bytes; want it holding %q", name, ok, len(got), content)
		}
	}
	if e, ok := files["errors.txt"]; ok {
		t.Errorf("errors.txt with a management token: %s", e)
	}
	for name, secret := range map[string]string{"management token": mgmt, "other token": other.SecretID, "node secret": strings.TrimSpace(string(nodeSecret))} {
		for file, content := range files {
			if strings.Contains(content, secret) {
				t.Errorf("%s holds the %s", file, name)
			}
		}
	}
}

// TestOperatorDebugErrors: bad durations and output are refused before
// any capture; a token that may read nothing still gets an archive, with
// errors.txt saying what was refused.
func TestOperatorDebugErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-duration", "1s", "-interval", "2s"}, "-interval at most -duration"},
		{[]string{"-duration", "0s"}, "must be positive"},
		{[]string{"-duration", "1h", "-interval", "1s"}, "3600 snapshots, over the limit 360"},
		{[]string{"-output", "/nonexistent/dir"}, `-output "/nonexistent/dir": not a directory`},
	} {
		code, _, stderr := run(t, "http://127.0.0.1:1", append([]string{"operator", "debug"}, tt.args...)...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, %q; want 1 with %q", tt.args, code, stderr, tt.want)
		}
	}

	addr, _ := startACLDevAgent(t, drivertest.ReachableTempDir(t))
	out := t.TempDir()
	code, stdout, stderr := run(t, addr, "operator", "debug", "-duration", "1s", "-interval", "1s", "-output", out)
	if code != 0 {
		t.Fatalf("anonymous operator debug: exit %d: %s %s", code, stdout, stderr)
	}
	archives, _ := filepath.Glob(filepath.Join(out, "drover-debug-*.tar.gz"))
	if len(archives) != 1 {
		t.Fatalf("archives %v, want one", archives)
	}
	files, _ := readArchive(t, archives[0])
	for _, refused := range []string{"agent-self.json: ", "interval/0000/metrics.prom: ", "interval/0000/goroutine.txt: ", "monitor.log: "} {
		if !strings.Contains(files["errors.txt"], refused) {
			t.Errorf("errors.txt %q does not say %s was refused", files["errors.txt"], refused)
		}
	}
}

// TestCappedBuffer: the debug log keeps its first bytes and counts the
// rest, never failing the stream.
func TestCappedBuffer(t *testing.T) {
	b := &cappedBuffer{max: 5}
	for _, w := range []string{"abc", "defg", "hi"} {
		if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if got := b.buf.String(); got != "abcde" || b.dropped != 4 {
		t.Errorf("kept %q, dropped %d; want abcde, 4", got, b.dropped)
	}
}

// TestDebugCaptureBytesBound: past maxDebugBytes the capture keeps no
// more files but the log and errors.txt, and says so once.
func TestDebugCaptureBytesBound(t *testing.T) {
	old := maxDebugBytes
	maxDebugBytes = 100
	t.Cleanup(func() { maxDebugBytes = old })
	d := &debugCapture{}
	d.add("a.json", make([]byte, 60))
	d.add("b.json", make([]byte, 60)) // over: left out
	d.add("c.json", make([]byte, 1))  // after: left out
	d.add("monitor.log", make([]byte, 500))
	var names []string
	for _, f := range d.files {
		names = append(names, f.name)
	}
	if strings.Join(names, ",") != "a.json,monitor.log" {
		t.Errorf("kept %v, want a.json and monitor.log", names)
	}
	if len(d.errors) != 1 || !strings.Contains(d.errors[0], "b.json and later files: left out") {
		t.Errorf("errors %q, want one saying from b.json on was left out", d.errors)
	}
}
