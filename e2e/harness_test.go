package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// droverBin is the binary under test, built once by TestMain.
var droverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "drover-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	droverBin = filepath.Join(dir, "drover")
	build := exec.Command("go", "build", "-o", droverBin, "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build drover:", err)
		os.Exit(1)
	}
	code := m.Run()
	if n := killLeftTasks(droverBin); n > 0 {
		fmt.Fprintf(os.Stderr, "e2e: killed %d task processes that stopped agents left running\n", n)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// killLeftTasks kills what agents of this run left behind: a client
// agent that is not -dev leaves its tasks running when it stops (the
// next one re-attaches), so the raw_exec executors and exec inits (this
// run's drover binary, bin) and their children's process groups outlive
// the tests. It returns how many processes it signalled.
func killLeftTasks(bin string) int {
	entries, _ := os.ReadDir("/proc")
	parents := map[int]bool{}
	ppid := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); strings.TrimSuffix(exe, " (deleted)") == bin {
			parents[pid] = true
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := strings.LastIndexByte(string(stat), ')'); err == nil && i > 0 {
			if f := strings.Fields(string(stat)[i+1:]); len(f) > 1 {
				ppid[pid], _ = strconv.Atoi(f[1])
			}
		}
	}
	n := 0
	for pid, parent := range ppid {
		if parents[parent] && !parents[pid] {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // the task's group
			_ = syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	for pid := range parents {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		n++
	}
	return n
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	// A port closed here can be the kernel's next answer too: one handed
	// out before (to this test or another) is skipped, so two agents of
	// one test never get the same port.
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		lns = append(lns, ln)
		port := ln.Addr().(*net.TCPAddr).Port
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	return ports
}

// handedOut is every port freePorts has returned in this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// agentProc is a running `drover agent` process.
type agentProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	addr    string // http://127.0.0.1:port
	logs    *syncBuffer
	done    chan struct{}
	waitErr error
	// token, when set, is sent as X-Nomad-Token by getJSON, do and drover.
	token string
	// hc, when set, is the HTTP client of getJSON and do (an agent
	// serving HTTPS); nil is http.DefaultClient.
	hc *http.Client
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// reachableDir is t.TempDir() made searchable by every user, its parent
// too (0700): exec and raw_exec tasks run as nobody, who must reach the
// agent's data dir there and the files a test shares with its tasks.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// rawExecPlugin enables raw_exec in an agent config, which a non-dev
// agent leaves off.
const rawExecPlugin = `
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`

// agentConfig writes the agent config with the given name, data
// dir, ports and GPU count, and returns its path.
func agentConfig(t *testing.T, dir, name string, ports []int, gpus int) string {
	t.Helper()
	cfg := fmt.Sprintf(`
name       = %q
data_dir   = %q
bind_addr  = "127.0.0.1"
datacenter = "dc1"
log_level  = "DEBUG"
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled = true
  simulated_gpu {
    count              = %d
    model              = "NVIDIA H100 80GB HBM3"
    memory             = "80 GiB"
    compute_capability = "9.0"
  }
}
`+rawExecPlugin, name, filepath.Join(dir, "data"), ports[0], ports[1], ports[2], gpus)
	path := filepath.Join(dir, name+".hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startAgent runs `drover agent args...` and waits until it has a leader
// and a ready node.
func startAgent(t *testing.T, httpPort int, args ...string) *agentProc {
	t.Helper()
	a := &agentProc{t: t, addr: fmt.Sprintf("http://127.0.0.1:%d", httpPort), logs: &syncBuffer{}, done: make(chan struct{})}
	a.cmd = exec.Command(droverBin, append([]string{"agent"}, args...)...)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start agent: %v", err)
	}
	go func() {
		a.waitErr = a.cmd.Wait()
		close(a.done)
	}()
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("agent log:\n%s", a.logs.String())
		}
	})
	a.waitReady()
	return a
}

func (a *agentProc) waitReady() {
	a.t.Helper()
	waitFor(a.t, 30*time.Second, "agent leader and a ready node", func() bool {
		var leader string
		if code := a.getJSON("/v1/status/leader", &leader); code != 200 || leader == "" {
			return false
		}
		var nodes []map[string]any
		if code := a.getJSON("/v1/nodes", &nodes); code != 200 {
			return false
		}
		for _, n := range nodes {
			if n["Status"] == "ready" {
				return true
			}
		}
		return false
	})
}

// stop sends SIGINT and waits for the process to exit.
func (a *agentProc) stop() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(os.Interrupt)
	select {
	case <-a.done:
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
		a.t.Errorf("agent did not stop within 20s of SIGINT")
	}
}

// getJSON GETs path and decodes the body into out; it returns the status.
func (a *agentProc) getJSON(path string, out any) int {
	req, err := http.NewRequest(http.MethodGet, a.addr+path, nil)
	if err != nil {
		return 0
	}
	if a.token != "" {
		req.Header.Set("X-Nomad-Token", a.token)
	}
	resp, err := a.httpClient().Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 && out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			a.t.Fatalf("GET %s: decode %q: %v", path, body, err)
		}
	}
	return resp.StatusCode
}

func (a *agentProc) httpClient() *http.Client {
	if a.hc != nil {
		return a.hc
	}
	return http.DefaultClient
}

// do sends a request and returns the status and body.
func (a *agentProc) do(method, path, body string) (int, string) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.addr+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if a.token != "" {
		req.Header.Set("X-Nomad-Token", a.token)
	}
	resp, err := a.httpClient().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// cliResult is one CLI run.
type cliResult struct {
	stdout, stderr string
	code           int
}

// drover runs the CLI against the agent.
func (a *agentProc) drover(args ...string) cliResult {
	a.t.Helper()
	env := []string{"DROVER_ADDR=" + a.addr}
	if a.token != "" {
		env = append(env, "DROVER_TOKEN="+a.token)
	}
	return runCLI(a.t, env, args...)
}

func runCLI(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, droverBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("drover %v: %v", args, err)
	}
	return cliResult{stdout: out.String(), stderr: errOut.String(), code: code}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
