package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// pinnedJob runs a raw_exec task on the node named node that prints a
// line naming it and sleeps.
func pinnedJob(name, node string) string {
	return fmt.Sprintf(`job %q {
  type        = "service"
  datacenters = ["dc1"]
  constraint {
    attribute = "${node.unique.name}"
    value     = %q
  }
  group "g" {
    task "main" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello-from-%s; exec sleep 600"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`, name, node, node)
}

// TestE2E_ClientOpsFromAnyAgent is must-holds 1 and 2 of issue 13: one
// server and two client-only agents, a job pinned to each client; from
// the server's address and from the other client's, logs (followed),
// files, exec, restart and node stats reach the allocation's node
// through the servers, with Drover's CLI and with the official Nomad
// client.
func TestE2E_ClientOpsFromAnyAgent(t *testing.T) {
	dir := reachableDir(t)
	ports := [][]int{freePorts(t, 3), freePorts(t, 3), freePorts(t, 3)}
	serverCfg := soloServerConfig(t, dir, ports[0], 0)
	srv := launchAgent(t, ports[0][0], "-config", serverCfg)
	waitFor(t, 30*time.Second, "the server to lead", func() bool { return leaderOf(srv) != "" })
	servers := []string{fmt.Sprintf("127.0.0.1:%d", ports[0][1])}
	clients := map[string]*agentProc{}
	for i, name := range []string{"client-a", "client-b"} {
		clients[name] = launchAgent(t, ports[i+1][0], "-config", clusterClientConfig(t, dir, name, ports[i+1], servers, 1))
	}
	waitFor(t, 30*time.Second, "both clients' nodes ready", func() bool { return nodesReady(srv, 2) })

	// A client-only agent answers cluster reads by forwarding, blocking
	// queries included (must-hold 4).
	var nodes []struct{ ID, Name string }
	if code := clients["client-a"].getJSON("/v1/nodes", &nodes); code != http.StatusOK || len(nodes) != 2 {
		t.Fatalf("GET /v1/nodes on a client-only agent: %d %+v, want both nodes", code, nodes)
	}
	nodeID := map[string]string{}
	for _, n := range nodes {
		nodeID[n.Name] = n.ID
	}

	other := map[string]string{"client-a": "client-b", "client-b": "client-a"}
	for node, via := range other {
		job := "on-" + node
		if r := srv.drover("job", "run", "-detach", writeFile(t, dir, job+".hcl", pinnedJob(job, node))); r.code != 0 {
			t.Fatalf("job run %s: exit %d: %s%s", job, r.code, r.stdout, r.stderr)
		}
		alloc := srv.waitAlloc(job, "running")
		if alloc.NodeID != nodeID[node] {
			t.Fatalf("%s placed on %s, want %s", job, alloc.NodeID, nodeID[node])
		}
		want := "hello-from-" + node
		// The UI of the other client shows this node's GPU tiles with live
		// figures, read from this node through the servers.
		if _, err := exec.LookPath("chromium"); err == nil || os.Getenv("CI") != "" {
			b := newBrowser(t, clients[via].addr)
			b.open("/nodes/" + nodeID[node])
			b.waitText(`[data-testid="gpu-tile"] [data-testid="gpu-util"]`, 15*time.Second, func(s string) bool { return strings.HasSuffix(s, "%") })
			b.checkClean()
		}
		for _, a := range []*agentProc{srv, clients[via]} {
			t.Run(job+" via "+a.addr, func(t *testing.T) {
				clientOps(t, a, alloc.ID, nodeID[node], want)
			})
		}
	}
}

// clientOps checks every client operation on alloc, asked of agent a.
func clientOps(t *testing.T, a *agentProc, allocID, nodeID, want string) {
	// Drover's CLI: logs and restart.
	waitFor(t, 10*time.Second, "the task's first line in alloc logs", func() bool {
		r := a.drover("alloc", "logs", allocID)
		return r.code == 0 && strings.Contains(r.stdout, want)
	})
	code, body := a.do("GET", "/v1/client/fs/cat/"+allocID+"?path=alloc/logs/main.stdout.0", "")
	if code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("fs cat: %d %q, want %q", code, body, want)
	}
	droverClientOps(t, a, allocID, want)
	var stats struct{ NodeID string }
	if code := a.getJSON("/v1/client/stats?node_id="+nodeID, &stats); code != http.StatusOK || stats.NodeID != nodeID {
		t.Errorf("node stats of %s: %d, node %q", nodeID, code, stats.NodeID)
	}

	// The official Nomad client.
	c, err := nomad.NewClient(&nomad.Config{Address: a.addr})
	if err != nil {
		t.Fatal(err)
	}
	alloc, _, err := c.Allocations().Info(allocID, nil)
	if err != nil {
		t.Fatalf("nomad Allocations().Info: %v", err)
	}
	files, _, err := c.AllocFS().List(alloc, "/alloc/logs", nil)
	if err != nil {
		t.Fatalf("nomad AllocFS().List: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "main.stdout.0") {
		t.Errorf("nomad AllocFS().List: %v, want main.stdout.0", names)
	}

	// Nodes().Stats of the allocation's node, remote or not: the right
	// node's GPUs (each node's simulated GPU has its own UUID).
	var node struct {
		NodeResources struct {
			Devices []struct{ Instances []struct{ ID string } }
		}
	}
	if code := a.getJSON("/v1/node/"+nodeID, &node); code != http.StatusOK || len(node.NodeResources.Devices) != 1 {
		t.Fatalf("GET node %s: %d %+v", nodeID, code, node)
	}
	gpu := node.NodeResources.Devices[0].Instances[0].ID
	hs, err := c.Nodes().Stats(nodeID, nil)
	if err != nil {
		t.Fatalf("nomad Nodes().Stats: %v", err)
	}
	if hs.Memory == nil || hs.Memory.Total == 0 || len(hs.DeviceStats) != 1 || hs.DeviceStats[0].InstanceStats[gpu] == nil ||
		len(hs.DeviceStats[0].InstanceStats) != 1 || hs.DeviceStats[0].InstanceStats[gpu].Summary == nil {
		t.Errorf("nomad Nodes().Stats(%s): memory %+v, devices %+v; want host memory and GPU %s only", nodeID, hs.Memory, hs.DeviceStats, gpu)
	}

	cancel := make(chan struct{})
	frames, errs := c.AllocFS().Logs(alloc, true, "main", "stdout", "start", 0, cancel, nil)
	var got bytes.Buffer
	deadline := time.After(10 * time.Second)
follow:
	for !strings.Contains(got.String(), want) {
		select {
		case f, ok := <-frames:
			if !ok {
				break follow
			}
			got.Write(f.Data)
		case err := <-errs:
			t.Fatalf("nomad AllocFS().Logs: %v", err)
		case <-deadline:
			break follow
		}
	}
	close(cancel)
	if !strings.Contains(got.String(), want) {
		t.Errorf("nomad AllocFS().Logs (follow): %q, want %q", got.String(), want)
	}

	var stdout, stderr bytes.Buffer
	ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	exit, err := c.Allocations().Exec(ctx, alloc, "main", false, []string{"/bin/sh", "-c", "echo hi; echo oops >&2; exit 3"},
		strings.NewReader(""), &stdout, &stderr, nil, nil)
	if err != nil || exit != 3 || stdout.String() != "hi\n" || stderr.String() != "oops\n" {
		t.Errorf("nomad Allocations().Exec: exit %d, err %v, stdout %q, stderr %q; want 3, hi, oops", exit, err, stdout.String(), stderr.String())
	}

	before := restarts(t, c, allocID)
	if r := a.drover("alloc", "restart", allocID); r.code != 0 {
		t.Fatalf("alloc restart: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 15*time.Second, "the task restarted and running", func() bool {
		al, _, err := c.Allocations().Info(allocID, nil)
		ts := al.TaskStates["main"]
		return err == nil && ts != nil && ts.Restarts > before && ts.State == "running"
	})
}

// droverClientOps checks alloc exec, alloc fs and alloc signal, asked of
// agent a, on alloc (a running `echo <want>; exec sleep 600` task).
func droverClientOps(t *testing.T, a *agentProc, allocID, want string) {
	t.Helper()
	if r := a.drover("alloc", "exec", allocID, "/bin/sh", "-c", "echo hi; echo oops >&2; exit 3"); r.code != 3 || r.stdout != "hi\n" || r.stderr != "oops\n" {
		t.Errorf("alloc exec: exit %d, stdout %q, stderr %q; want 3, hi, oops", r.code, r.stdout, r.stderr)
	}
	if r := a.drover("alloc", "exec", allocID, "ls", "-d", "/"); r.code != 0 || r.stdout != "/\n" {
		t.Errorf("alloc exec ls -d /: exit %d, stdout %q, stderr %q; want 0 and /", r.code, r.stdout, r.stderr)
	}
	if r := a.drover("alloc", "fs", "cat", allocID, "alloc/logs/main.stdout.0"); r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("alloc fs cat: exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
	}
	if r := a.drover("alloc", "fs", "ls", allocID, "alloc/logs"); r.code != 0 || !strings.Contains(r.stdout, "main.stdout.0") || !strings.HasPrefix(r.stdout, "Mode") {
		t.Errorf("alloc fs ls: exit %d, stdout %q, stderr %q; want a table with main.stdout.0", r.code, r.stdout, r.stderr)
	}
	if r := a.drover("alloc", "fs", allocID, "alloc/logs/main.stdout.0"); r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("alloc fs ALLOC FILE: exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
	}
	if r := a.drover("alloc", "fs", "cat", allocID, "alloc/logs/nope"); r.code != 1 || !strings.Contains(r.stderr, "nope") {
		t.Errorf("alloc fs cat of a missing file: exit %d, stderr %q; want 1 naming it", r.code, r.stderr)
	}
	// SIGCONT leaves sleep running (SIGUSR1 would end it).
	if r := a.drover("alloc", "signal", "-s", "SIGCONT", allocID); r.code != 0 {
		t.Errorf("alloc signal -s SIGCONT: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r := a.drover("alloc", "signal", "-s", "SIGBOGUS", allocID, "main"); r.code != 1 || !strings.Contains(r.stderr, "SIGBOGUS") {
		t.Errorf("alloc signal -s SIGBOGUS: exit %d, stderr %q; want 1 naming the signal", r.code, r.stderr)
	}
}

func restarts(t *testing.T, c *nomad.Client, allocID string) uint64 {
	t.Helper()
	al, _, err := c.Allocations().Info(allocID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts := al.TaskStates["main"]; ts != nil {
		return ts.Restarts
	}
	return 0
}

// TestE2E_ClientOpsAcrossServers: three servers, each client connected to
// a different one; from every server's address (the leader's included,
// which forwarded node calls reach from the followers), logs, files and
// exec reach both allocations: a server without the node's connection
// relays through the server that has it.
func TestE2E_ClientOpsAcrossServers(t *testing.T) {
	dir := reachableDir(t)
	var ports [][]int
	for range 5 {
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
		servers = append(servers, launchAgent(t, ports[i][0], "-config", clusterServerConfig(t, dir, fmt.Sprintf("server-%d", i+1), ports[i], join)))
	}
	waitFor(t, 30*time.Second, "three servers to agree on a leader", func() bool { return agreedLeader(servers) != "" })
	// client-a knows only server-2, client-b only server-3.
	for i, name := range []string{"client-a", "client-b"} {
		launchAgent(t, ports[3+i][0], "-config", clusterClientConfig(t, dir, name, ports[3+i], []string{rpcAddr(1 + i)}, 1))
	}
	waitFor(t, 30*time.Second, "both clients' nodes ready", func() bool { return nodesReady(servers[0], 2) })

	for _, node := range []string{"client-a", "client-b"} {
		job := "on-" + node
		if r := servers[0].drover("job", "run", "-detach", writeFile(t, dir, job+".hcl", pinnedJob(job, node))); r.code != 0 {
			t.Fatalf("job run %s: exit %d: %s%s", job, r.code, r.stdout, r.stderr)
		}
		alloc := servers[0].waitAlloc(job, "running")
		want := "hello-from-" + node
		for i, a := range servers {
			waitFor(t, 10*time.Second, fmt.Sprintf("%s's log through server-%d", job, i+1), func() bool {
				code, body := a.do("GET", "/v1/client/fs/cat/"+alloc.ID+"?path=alloc/logs/main.stdout.0", "")
				return code == http.StatusOK && strings.Contains(body, want)
			})
			r := a.drover("alloc", "exec", alloc.ID, "/bin/sh", "-c", "echo in-"+node+"; exit 5")
			if r.code != 5 || !strings.Contains(r.stdout, "in-"+node) {
				t.Errorf("alloc exec on %s through server-%d: exit %d, stdout %q, stderr %q", node, i+1, r.code, r.stdout, r.stderr)
			}
		}
	}
}
