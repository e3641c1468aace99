package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// clusterServerConfig writes the config of one of three server agents
// (no client) that bootstrap together: bootstrap_expect = 3 and a
// retry_join of the others' serf addresses. ports are http, rpc, serf.
func clusterServerConfig(t *testing.T, dir, name string, ports []int, join []string) string {
	t.Helper()
	quoted := make([]string, len(join))
	for i, j := range join {
		quoted[i] = strconv.Quote(j)
	}
	return writeFile(t, dir, name+".hcl", fmt.Sprintf(`
name      = %q
data_dir  = %q
bind_addr = "127.0.0.1"
log_level = "DEBUG"
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 3
  server_join {
    retry_join     = [%s]
    retry_interval = "1s"
  }
}
`, name, filepath.Join(dir, name), ports[0], ports[1], ports[2], strings.Join(quoted, ", ")))
}

// clusterClientConfig writes a client-only agent's config that knows the
// servers by their RPC addresses, with gpus simulated GPUs. Its data dir
// is dir/name.
func clusterClientConfig(t *testing.T, dir, name string, ports []int, servers []string, gpus int) string {
	t.Helper()
	quoted := make([]string, len(servers))
	for i, s := range servers {
		quoted[i] = strconv.Quote(s)
	}
	return writeFile(t, dir, name+".hcl", fmt.Sprintf(`
name      = %q
data_dir  = %q
bind_addr = "127.0.0.1"
log_level = "DEBUG"
ports {
  http = %d
  rpc  = %d
  serf = %d
}
client {
  enabled = true
  servers = [%s]
  simulated_gpu {
    count = %d
    model = "NVIDIA H100 80GB HBM3"
  }
}
`+rawExecPlugin, name, filepath.Join(dir, name), ports[0], ports[1], ports[2], strings.Join(quoted, ", "), gpus))
}

// soloServerConfig writes the config of a server-only agent that
// bootstraps a cluster of one, named server-1 with data dir
// dir/server-1; ttl 0 keeps the default heartbeat TTL.
func soloServerConfig(t *testing.T, dir string, ports []int, ttl time.Duration) string {
	t.Helper()
	extra := ""
	if ttl > 0 {
		extra = fmt.Sprintf("  heartbeat_ttl    = %q\n", ttl.String())
	}
	return writeFile(t, dir, "server.hcl", fmt.Sprintf(`
name      = "server-1"
data_dir  = %q
bind_addr = "127.0.0.1"
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
%s}
`, filepath.Join(dir, "server-1"), ports[0], ports[1], ports[2], extra))
}

// launchAgent runs `drover agent args...` without waiting for anything
// (a server of a cluster has no leader until the others are up).
func launchAgent(t *testing.T, httpPort int, args ...string) *agentProc {
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
			t.Logf("agent %s log:\n%s", a.addr, a.logs.String())
		}
	})
	return a
}

// leaderOf returns what the agent answers for /v1/status/leader, "" on
// any error.
func leaderOf(a *agentProc) string {
	var leader string
	if code := a.getJSON("/v1/status/leader", &leader); code != http.StatusOK {
		return ""
	}
	return leader
}

// agreedLeader returns the leader every agent names, or "" while they
// disagree or one names none.
func agreedLeader(agents []*agentProc) string {
	first := leaderOf(agents[0])
	for _, a := range agents[1:] {
		if leaderOf(a) != first {
			return ""
		}
	}
	return first
}

// TestE2E_ClusterSurvivesLeaderKill is must-hold 1 of issue 4: three
// server agents on loopback with bootstrap_expect = 3 and retry_join
// elect a leader; after kill -9 of the leader the other two elect a new
// one within 10 s, every job is still readable, and a job registered
// through a former follower is scheduled on the client agent.
func TestE2E_ClusterSurvivesLeaderKill(t *testing.T) {
	dir := reachableDir(t)
	var ports [][]int
	for range 4 {
		ports = append(ports, freePorts(t, 3))
	}
	serf := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i][2]) }
	rpcAddr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i][1]) }
	var servers []*agentProc
	for i := range 3 {
		var join []string
		for j := range 3 {
			if j != i {
				join = append(join, serf(j))
			}
		}
		cfg := clusterServerConfig(t, dir, fmt.Sprintf("server-%d", i+1), ports[i], join)
		servers = append(servers, launchAgent(t, ports[i][0], "-config", cfg))
	}
	start := time.Now()
	var leader string
	waitFor(t, 30*time.Second, "three servers to agree on a leader", func() bool {
		leader = agreedLeader(servers)
		return leader != ""
	})
	var peers []string
	if code := servers[0].getJSON("/v1/status/peers", &peers); code != http.StatusOK || len(peers) != 3 {
		t.Fatalf("peers: status %d, %v; want the 3 servers", code, peers)
	}
	t.Logf("leader %s elected %s after start", leader, time.Since(start).Round(time.Millisecond))

	// Four GPUs: one for each job of the test.
	client := launchAgent(t, ports[3][0], "-config", clusterClientConfig(t, dir, "client-1", ports[3], []string{rpcAddr(0), rpcAddr(1), rpcAddr(2)}, 4))
	waitFor(t, 30*time.Second, "the client's node ready", func() bool {
		var nodes []map[string]any
		return servers[0].getJSON("/v1/nodes", &nodes) == http.StatusOK && len(nodes) == 1 && nodes[0]["Status"] == "ready"
	})

	jobs := []string{"before-1", "before-2", "before-3"}
	for _, id := range jobs {
		path := writeFile(t, dir, id+".hcl", gpuJob(id, 1, "sleep 600"))
		if r := servers[2].drover("job", "run", "-detach", path); r.code != 0 {
			t.Fatalf("job run %s: exit %d\nstdout: %s\nstderr: %s", id, r.code, r.stdout, r.stderr)
		}
	}

	var old *agentProc
	var rest []*agentProc
	for i, a := range servers {
		if rpcAddr(i) == leader {
			old = a
		} else {
			rest = append(rest, a)
		}
	}
	if old == nil {
		t.Fatalf("leader %s is none of the servers' RPC addresses", leader)
	}
	if err := old.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var next string
	waitFor(t, 10*time.Second, "a new leader within 10 s of kill -9", func() bool {
		next = agreedLeader(rest)
		return next != "" && next != leader
	})
	t.Logf("new leader %s elected %s after kill -9 of %s", next, time.Since(killed).Round(time.Millisecond), leader)

	for _, a := range rest {
		for _, id := range jobs {
			var job map[string]any
			if code := a.getJSON("/v1/job/"+id, &job); code != http.StatusOK || job["ID"] != id {
				t.Errorf("GET job %s on %s: status %d, %v", id, a.addr, code, job["ID"])
			}
		}
	}

	follower := rest[0]
	if rpcAddr(indexOf(servers, follower)) == next {
		follower = rest[1]
	}
	path := writeFile(t, dir, "after.hcl", gpuJob("after", 1, "sleep 600"))
	if r := follower.drover("job", "run", "-detach", path); r.code != 0 {
		t.Fatalf("job run through the follower: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	running := follower.waitAlloc("after", "running")
	if running.NodeID == "" {
		t.Errorf("job registered through the follower: allocation %+v has no node", running)
	}
	checkStaleHeaders(t, follower)

	var nodes []map[string]any
	if code := follower.getJSON("/v1/nodes", &nodes); code != http.StatusOK || len(nodes) != 1 || nodes[0]["Status"] != "ready" {
		t.Errorf("client node after the leader kill: status %d, %v; want ready", code, nodes)
	}
	select {
	case <-client.done:
		t.Errorf("client agent exited: %v", client.waitErr)
	default:
	}
}

func indexOf(agents []*agentProc, a *agentProc) int {
	for i, x := range agents {
		if x == a {
			return i
		}
	}
	return -1
}

// checkStaleHeaders: a follower answers a ?stale read itself with
// X-Nomad-KnownLeader true and a recent X-Nomad-LastContact, and a
// consistent read with the leader's freshness.
func checkStaleHeaders(t *testing.T, follower *agentProc) {
	t.Helper()
	for _, path := range []string{"/v1/jobs?stale", "/v1/jobs"} {
		resp, err := http.Get(follower.addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		known := resp.Header.Get("X-Nomad-KnownLeader")
		contact, err := strconv.ParseInt(resp.Header.Get("X-Nomad-LastContact"), 10, 64)
		if resp.StatusCode != http.StatusOK || known != "true" || err != nil || contact < 0 || contact > 5000 {
			t.Errorf("GET %s on a follower: status %d, X-Nomad-KnownLeader %q, X-Nomad-LastContact %q; want 200, true, a contact under 5 s",
				path, resp.StatusCode, known, resp.Header.Get("X-Nomad-LastContact"))
		}
	}
}

// nodesReady reports whether the server lists n nodes, all ready.
func nodesReady(a *agentProc, n int) bool {
	var nodes []map[string]any
	if a.getJSON("/v1/nodes", &nodes) != http.StatusOK || len(nodes) != n {
		return false
	}
	for _, node := range nodes {
		if node["Status"] != "ready" {
			return false
		}
	}
	return true
}

// pidFromLog reads the PID=<n> line a task printed first, from the task's
// stdout log in its client agent's data dir (a killed agent serves no
// logs API).
func pidFromLog(t *testing.T, agentDataDir, allocID, task string) int {
	t.Helper()
	var pid int
	waitFor(t, 20*time.Second, "the task's PID in its log", func() bool {
		b, err := os.ReadFile(filepath.Join(agentDataDir, "client", "alloc", allocID, "alloc", "logs", task+".stdout.0"))
		if err != nil {
			return false
		}
		m := pidLine.FindStringSubmatch(string(b))
		if m == nil {
			return false
		}
		pid, _ = strconv.Atoi(m[1])
		return pid > 0
	})
	return pid
}

// TestE2E_ClientKillReplacesAllocs is must-hold 3 of issue 4: of two
// client agents, the one running a service job's allocation is killed
// with kill -9. Within the heartbeat TTL plus a grace period the server
// marks its node down, the allocation lost, and the other client runs a
// replacement. The killed client, started again on its data dir, stops
// the original task (which outlived its agent), so the job runs once.
func TestE2E_ClientKillReplacesAllocs(t *testing.T) {
	const ttl, grace = 2 * time.Second, 10 * time.Second
	dir := reachableDir(t)
	ports := [][]int{freePorts(t, 3), freePorts(t, 3), freePorts(t, 3)}
	serverCfg := soloServerConfig(t, dir, ports[0], ttl)
	srv := launchAgent(t, ports[0][0], "-config", serverCfg)
	waitFor(t, 30*time.Second, "the server to lead", func() bool { return leaderOf(srv) != "" })

	servers := []string{fmt.Sprintf("127.0.0.1:%d", ports[0][1])}
	names := []string{"client-a", "client-b"}
	cfgs := map[string]string{}
	clients := map[string]*agentProc{}
	for i, name := range names {
		cfgs[name] = clusterClientConfig(t, dir, name, ports[i+1], servers, 1)
		clients[name] = launchAgent(t, ports[i+1][0], "-config", cfgs[name])
	}
	waitFor(t, 30*time.Second, "both clients' nodes ready", func() bool { return nodesReady(srv, 2) })

	job := strings.Replace(sleeperJob, `"sleeper"`, `"web"`, 1)
	job = strings.Replace(job, "memory = 64\n", "memory = 64\n        device \"nvidia/gpu\" {\n          count = 1\n        }\n", 1)
	if r := srv.drover("job", "run", "-detach", writeFile(t, dir, "web.hcl", job)); r.code != 0 {
		t.Fatalf("job run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	orig := srv.waitAlloc("web", "running")
	var node struct{ Name string }
	if code := srv.getJSON("/v1/node/"+orig.NodeID, &node); code != http.StatusOK {
		t.Fatalf("GET node %s: status %d", orig.NodeID, code)
	}
	victim := node.Name
	pid := pidFromLog(t, filepath.Join(dir, victim), orig.ID, "sleep")
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	if err := clients[victim].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-clients[victim].done
	killed := time.Now()
	var repl allocStub
	waitFor(t, ttl+grace, "the allocation lost and replaced on the other client", func() bool {
		var lost, running bool
		for _, a := range srv.jobAllocs("web") {
			switch {
			case a.ID == orig.ID:
				lost = a.ClientStatus == "lost"
			case a.ClientStatus == "running" && a.NodeID != orig.NodeID:
				running, repl = true, a
			}
		}
		return lost && running
	})
	t.Logf("allocation lost and its replacement running %s after kill -9 of its client (TTL %s)", time.Since(killed).Round(time.Millisecond), ttl)
	if !processAlive(pid) {
		t.Fatalf("original task %d died with its agent; the test needs it running", pid)
	}

	clients[victim] = launchAgent(t, ports[slicesIndex(names, victim)+1][0], "-config", cfgs[victim])
	waitFor(t, 30*time.Second, fmt.Sprintf("the original task %d stopped by its restarted client", pid), func() bool {
		return !processAlive(pid)
	})
	waitFor(t, 30*time.Second, "both nodes ready again", func() bool { return nodesReady(srv, 2) })
	// The restarted client may report the original running (re-attached)
	// before it reports it stopped.
	waitFor(t, 10*time.Second, "only the replacement running", func() bool {
		for _, a := range srv.jobAllocs("web") {
			if (a.ClientStatus == "running") != (a.ID == repl.ID) {
				return false
			}
		}
		return true
	})
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
