package dockercluster

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/droverhq/drover/api"
)

// Ports every agent listens on, on its own container IP.
const (
	httpPort = 4646
	rpcPort  = 4647
	serfPort = 4648
)

// engineWait bounds one call to the Docker engine.
const engineWait = 30 * time.Second

// spec is the shape of a cluster.
type spec struct {
	servers, clients int
	gpusPerClient    int
	// heartbeatTTL is the servers' node heartbeat TTL ("5s").
	heartbeatTTL string
}

// member is one agent container.
type member struct {
	name   string // s1, c2
	server bool
	ip     netip.Addr
	id     string // container ID
	// api sends the management token; the workload has its own clients.
	api *api.Client

	mu          sync.Mutex
	running     bool
	partitioned bool
}

func (m *member) httpAddr() string { return fmt.Sprintf("https://%s:%d", m.ip, httpPort) }

// reachable reports whether the test can talk to m: running and on the
// network.
func (m *member) reachable() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running && !m.partitioned
}

// cluster is Drover agents in containers on a private network.
type cluster struct {
	t       *testing.T
	docker  *client.Client
	image   string
	prefix  string // names of this run's containers, network and image
	netID   string
	subnet  netip.Prefix
	sec     *secrets
	servers []*member
	clients []*member
	// others are containers outside the cluster proper (the snapshot
	// restore target); they are removed with the rest.
	others []*member
}

// dockerEngine returns a client of the local Docker Engine, or skips the
// test when none answers (fails when CI=true).
func dockerEngine(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker engine required in CI: %v", err)
		}
		t.Skipf("docker engine not reachable, skipping the container cluster suite: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newCluster builds the image and starts sp's servers and clients on a
// new network. Everything it creates is removed when the test ends.
func newCluster(t *testing.T, sp spec) *cluster {
	t.Helper()
	docker := dockerEngine(t)
	bins := buildBinaries(t)
	c := &cluster{t: t, docker: docker, prefix: "drover-e2e-" + randomHex(4), sec: newSecrets(t)}
	c.image = c.prefix + ":latest"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := buildImage(ctx, docker, bins, c.image, c.prefix); err != nil {
		t.Fatalf("build image: %v", err)
	}
	t.Cleanup(c.removeImage)
	c.createNetwork()
	for i := range sp.servers {
		c.servers = append(c.servers, c.add(fmt.Sprintf("s%d", i+1), true, 11+i))
	}
	for i := range sp.clients {
		c.clients = append(c.clients, c.add(fmt.Sprintf("c%d", i+1), false, 21+i))
	}
	t.Cleanup(c.removeContainers)
	for _, m := range c.servers {
		c.create(m, c.serverConfig(m, sp))
	}
	for _, m := range c.clients {
		c.create(m, c.clientConfig(m, sp))
	}
	for _, m := range c.members() {
		c.start(m)
	}
	return c
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *cluster) members() []*member { return append(append([]*member{}, c.servers...), c.clients...) }

// add makes a member with the host address host in the subnet.
func (c *cluster) add(name string, server bool, host int) *member {
	ip := c.subnet.Addr().As4()
	ip[3] = byte(host)
	m := &member{name: name, server: server, ip: netip.AddrFrom4(ip)}
	m.api = c.apiClient(m, c.sec.management)
	return m
}

// createNetwork creates a bridge network on a random 10.x.y.0/24 subnet,
// trying others when one overlaps an existing network.
func (c *cluster) createNetwork() {
	var last error
	for range 8 {
		x, _ := rand.Int(rand.Reader, big.NewInt(50))
		y, _ := rand.Int(rand.Reader, big.NewInt(256))
		c.subnet = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(200 + x.Int64()), byte(y.Int64()), 0}), 24)
		ctx, cancel := context.WithTimeout(context.Background(), engineWait)
		res, err := c.docker.NetworkCreate(ctx, c.prefix, client.NetworkCreateOptions{
			Driver: "bridge",
			IPAM:   &network.IPAM{Config: []network.IPAMConfig{{Subnet: c.subnet}}},
			Labels: map[string]string{"drover-e2e": c.prefix},
		})
		cancel()
		if err == nil {
			c.netID = res.ID
			c.t.Cleanup(c.removeNetwork)
			return
		}
		last = err
	}
	c.t.Fatalf("create network: %v", last)
}

// retryJoin lists the servers' serf addresses.
func (c *cluster) retryJoin() string {
	var addrs []string
	for _, s := range c.servers {
		addrs = append(addrs, fmt.Sprintf("%q", fmt.Sprintf("%s:%d", s.ip, serfPort)))
	}
	return strings.Join(addrs, ", ")
}

func (c *cluster) serverConfig(m *member, sp spec) string {
	join := ""
	if sp.servers > 1 {
		join = fmt.Sprintf("\n  server_join {\n    retry_join     = [%s]\n    retry_interval = \"1s\"\n  }", c.retryJoin())
	}
	return fmt.Sprintf(`name      = %q
data_dir  = "/data"
bind_addr = %q
log_level = "DEBUG"
server {
  enabled          = true
  bootstrap_expect = %d
  heartbeat_ttl    = %q
  encrypt          = %q%s
}
%s`, m.name, m.ip, sp.servers, sp.heartbeatTTL, c.sec.gossipKey, join, securityConfig())
}

func (c *cluster) clientConfig(m *member, sp spec) string {
	var servers []string
	for _, s := range c.servers {
		servers = append(servers, fmt.Sprintf("%q", fmt.Sprintf("%s:%d", s.ip, rpcPort)))
	}
	return fmt.Sprintf(`name      = %q
data_dir  = "/data"
bind_addr = %q
log_level = "DEBUG"
client {
  enabled = true
  servers = [%s]
  simulated_gpu {
    count  = %d
    model  = "NVIDIA H100 80GB HBM3"
    memory = "80 GiB"
  }
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
%s`, m.name, m.ip, strings.Join(servers, ", "), sp.gpusPerClient, securityConfig())
}

// file is one file copied into a container.
type file struct {
	path string // absolute
	mode int64
	data []byte
}

// create creates m's container with its static IP and copies its config
// and TLS files in (the agent runs as root; its key is 0600).
func (c *cluster) create(m *member, config string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), engineWait)
	defer cancel()
	res, err := c.docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:  c.prefix + "-" + m.name,
		Image: c.image,
		Config: &container.Config{
			Cmd:    []string{"agent", "-config", "/etc/drover/agent.hcl"},
			Labels: map[string]string{"drover-e2e": c.prefix},
		},
		HostConfig: &container.HostConfig{},
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			c.prefix: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: m.ip}},
		}},
	})
	if err != nil {
		c.t.Fatalf("create container %s: %v", m.name, err)
	}
	m.id = res.ID
	files := append([]file{{"/etc/drover/agent.hcl", 0o644, []byte(config)}}, c.agentFiles(m)...)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range []string{"etc/", "etc/drover/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
			c.t.Fatal(err)
		}
	}
	for _, f := range files {
		h := &tar.Header{Name: strings.TrimPrefix(f.path, "/"), Mode: f.mode, Size: int64(len(f.data)), Uid: 0, Gid: 0}
		if err := tw.WriteHeader(h); err != nil {
			c.t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.docker.CopyToContainer(ctx, m.id, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf}); err != nil {
		c.t.Fatalf("copy config and TLS files into %s: %v", m.name, err)
	}
}

// start starts (or restarts) m's container.
func (c *cluster) start(m *member) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), engineWait)
	defer cancel()
	if _, err := c.docker.ContainerStart(ctx, m.id, client.ContainerStartOptions{}); err != nil {
		c.t.Fatalf("start %s: %v", m.name, err)
	}
	m.mu.Lock()
	m.running = true
	m.mu.Unlock()
}

// kill sends SIGKILL to m's container (docker kill) and waits until it
// is stopped.
func (c *cluster) kill(m *member) {
	c.t.Helper()
	m.mu.Lock()
	m.running = false
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), engineWait)
	defer cancel()
	if _, err := c.docker.ContainerKill(ctx, m.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		c.t.Fatalf("kill %s: %v", m.name, err)
	}
	waitUntil(c.t, engineWait, m.name+" stopped", func() bool {
		res, err := c.docker.ContainerInspect(ctx, m.id, client.ContainerInspectOptions{})
		return err == nil && res.Container.State != nil && !res.Container.State.Running
	})
}

// partition disconnects m from the network (docker network disconnect).
func (c *cluster) partition(m *member) {
	c.t.Helper()
	m.mu.Lock()
	m.partitioned = true
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), engineWait)
	defer cancel()
	if _, err := c.docker.NetworkDisconnect(ctx, c.netID, client.NetworkDisconnectOptions{Container: m.id, Force: true}); err != nil {
		c.t.Fatalf("disconnect %s: %v", m.name, err)
	}
}

// heal connects m to the network again, with its address.
func (c *cluster) heal(m *member) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), engineWait)
	defer cancel()
	_, err := c.docker.NetworkConnect(ctx, c.netID, client.NetworkConnectOptions{
		Container:      m.id,
		EndpointConfig: &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: m.ip}},
	})
	if err != nil {
		c.t.Fatalf("reconnect %s: %v", m.name, err)
	}
	m.mu.Lock()
	m.partitioned = false
	m.mu.Unlock()
}

// leader returns the server that every reachable server other than the
// excluded ones names as leader, or nil.
func (c *cluster) leader(exclude ...*member) *member {
	var named string
	for _, s := range c.servers {
		if !s.reachable() || contains(exclude, s) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		addr, err := s.api.Status().Leader(ctx)
		cancel()
		if err != nil || addr == "" || (named != "" && addr != named) {
			return nil
		}
		named = addr
	}
	for _, s := range c.servers {
		if fmt.Sprintf("%s:%d", s.ip, rpcPort) == named && !contains(exclude, s) {
			return s
		}
	}
	return nil
}

func contains(ms []*member, m *member) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// waitLeader waits until the reachable servers other than exclude agree
// on a leader among themselves, and returns it with the time it took.
func (c *cluster) waitLeader(timeout time.Duration, exclude ...*member) (*member, time.Duration) {
	c.t.Helper()
	start := time.Now()
	var l *member
	waitUntil(c.t, timeout, "an agreed leader", func() bool {
		l = c.leader(exclude...)
		return l != nil
	})
	return l, time.Since(start)
}

// readyNodes returns how many nodes the cluster reports ready.
func (c *cluster) readyNodes() int {
	a := c.anyServer()
	if a == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nodes, _, err := a.api.Nodes().List(ctx, nil)
	if err != nil {
		return 0
	}
	n := 0
	for _, node := range nodes {
		if node.Status == "ready" {
			n++
		}
	}
	return n
}

// anyServer returns a reachable server, the leader when known.
func (c *cluster) anyServer() *member {
	if l := c.leader(); l != nil {
		return l
	}
	for _, s := range c.servers {
		if s.reachable() {
			return s
		}
	}
	return nil
}

// waitReady waits for a leader, for the ACLs to be bootstrapped
// (bootstrapping them the first time) and for every client's node
// ready; it returns how long the leader and the nodes took.
func (c *cluster) waitReady(timeout time.Duration) (leader, nodes time.Duration) {
	c.t.Helper()
	start := time.Now()
	_, leader = c.waitLeader(timeout)
	c.bootstrapACL(c.servers)
	waitUntil(c.t, timeout, fmt.Sprintf("%d ready nodes", len(c.clients)), func() bool {
		return c.readyNodes() == len(c.clients)
	})
	return leader, time.Since(start)
}

// logs returns the last lines of m's container output.
func (c *cluster) logs(m *member, lines int) string {
	ctx, cancel := context.WithTimeout(context.Background(), engineWait)
	defer cancel()
	rc, err := c.docker.ContainerLogs(ctx, m.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(lines)})
	if err != nil {
		return fmt.Sprintf("(logs: %v)", err)
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil && err != io.EOF {
		fmt.Fprintf(&out, "(logs: %v)", err)
	}
	return out.String()
}

// removeContainers force-removes the members' containers, logging their
// output first when the test failed.
func (c *cluster) removeContainers() {
	if os.Getenv("DROVER_E2E_KEEP") != "" {
		c.t.Logf("DROVER_E2E_KEEP is set: leaving containers %s-*, network %s and image %s", c.prefix, c.prefix, c.image)
		return
	}
	for _, m := range append(c.members(), c.others...) {
		if m.id == "" {
			continue
		}
		if c.t.Failed() {
			c.t.Logf("--- %s log (last 80 lines):\n%s", m.name, c.logs(m, 80))
		}
		ctx, cancel := context.WithTimeout(context.Background(), engineWait)
		_, err := c.docker.ContainerRemove(ctx, m.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		cancel()
		if err != nil && !cerrdefs.IsNotFound(err) {
			c.t.Errorf("cleanup: remove container %s: %v", m.name, err)
		}
	}
}

func (c *cluster) removeNetwork() {
	if os.Getenv("DROVER_E2E_KEEP") != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), engineWait)
	defer cancel()
	if _, err := c.docker.NetworkRemove(ctx, c.netID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		c.t.Errorf("cleanup: remove network %s: %v", c.prefix, err)
	}
}

func (c *cluster) removeImage() {
	if os.Getenv("DROVER_E2E_KEEP") != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), engineWait)
	defer cancel()
	if _, err := c.docker.ImageRemove(ctx, c.image, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		c.t.Errorf("cleanup: remove image %s: %v", c.image, err)
	}
}

// waitUntil polls cond every 100ms until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: still no %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
