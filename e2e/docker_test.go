package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/droverhq/drover/drivers/docker"
)

// dockerWait bounds the waits on the engine in these tests.
const dockerWait = 15 * time.Second

// testLabel is a label every container of these tests carries (set
// through the task's labels), valued with the test's name, so cleanup
// finds containers whose allocation the test never learned.
const testLabel = "drover_e2e_test"

// dockerEngine returns a client of the local Docker Engine. Without a
// reachable engine the test is skipped, or fails when CI=true.
func dockerEngine(t *testing.T) *client.Client {
	t.Helper()
	api, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker engine required in CI: %v", err)
		}
		t.Skipf("docker engine not reachable, skipping: %v", err)
	}
	t.Cleanup(func() { api.Close() })
	return api
}

var (
	helloImageOnce sync.Once
	helloImageRef  string
	helloImageErr  error
)

// dockerHelloImage returns the tag of the dockerhello image, building it
// once per test binary.
func dockerHelloImage(t *testing.T, api *client.Client) string {
	t.Helper()
	helloImageOnce.Do(func() { helloImageRef, helloImageErr = buildHelloImage(api) })
	if helloImageErr != nil {
		t.Fatalf("build test image: %v", helloImageErr)
	}
	return helloImageRef
}

// buildHelloImage compiles testdata/dockerhello static and builds it into
// a FROM scratch image tagged drover-e2e/hello:<hash of the binary>,
// unless the engine already has that tag.
func buildHelloImage(api *client.Client) (string, error) {
	dir, err := os.MkdirTemp("", "drover-e2e-hello-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/dockerhello")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build dockerhello: %v\n%s", err, out)
	}
	binData, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(binData)
	ref := "drover-e2e/hello:" + hex.EncodeToString(sum[:])[:12]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := api.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	buildCtx, err := tarFiles(map[string][]byte{
		"Dockerfile": []byte("FROM scratch\nCOPY hello /hello\nENTRYPOINT [\"/hello\"]\n"),
		"hello":      binData,
	})
	if err != nil {
		return "", err
	}
	res, err := api.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{Tags: []string{ref}, Remove: true, ForceRemove: true})
	if err != nil {
		return "", fmt.Errorf("image build: %w", err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return ref, nil
		} else if err != nil {
			return "", fmt.Errorf("image build output: %w", err)
		}
		if m.Error != nil {
			return "", fmt.Errorf("image build: %s", m.Error.Message)
		}
	}
}

// tarFiles returns a tar archive of files, the build context.
func tarFiles(files map[string][]byte) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	return &buf, tw.Close()
}

// dockerJobSpec is a one-task docker job.
type dockerJobSpec struct {
	id, jobType, image, test string
	line                     string // what the task prints first
	gpus                     int
	group                    string // extra group stanzas
}

func (s dockerJobSpec) hcl() string {
	device := ""
	if s.gpus > 0 {
		device = fmt.Sprintf(`
        device "nvidia/gpu" {
          count = %d
        }`, s.gpus)
	}
	return fmt.Sprintf(`job %q {
  type        = %q
  datacenters = ["dc1"]

  group "g" {
    %s
    task "main" {
      driver = "docker"
      config {
        image  = %q
        args   = [%q]
        labels = { %s = %q }
      }
      resources {
        cpu    = 100
        memory = 64%s
      }
    }
  }
}
`, s.id, s.jobType, s.group, s.image, s.line, testLabel, s.test, device)
}

// runJob writes the job file and runs it with -detach.
func runJob(t *testing.T, a *agentProc, dir string, s dockerJobSpec) {
	t.Helper()
	path := writeFile(t, dir, s.id+".hcl", s.hcl())
	if r := a.drover("job", "run", "-detach", path); r.code != 0 {
		t.Fatalf("job run %s: exit %d: %s%s", s.id, r.code, r.stdout, r.stderr)
	}
}

// stopJob runs `drover job stop -detach`.
func stopJob(t *testing.T, a *agentProc, id string) {
	t.Helper()
	if r := a.drover("job", "stop", "-detach", id); r.code != 0 {
		t.Fatalf("job stop %s: exit %d: %s%s", id, r.code, r.stdout, r.stderr)
	}
}

// containersWithLabel lists the engine's containers, stopped ones
// included, that carry label key=value.
func containersWithLabel(t *testing.T, api *client.Client, key, value string) []container.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dockerWait)
	defer cancel()
	res, err := api.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", key+"="+value),
	})
	if err != nil {
		t.Fatalf("list containers %s=%s: %v", key, value, err)
	}
	return res.Items
}

// removeTestContainers force-removes, when the test ends, every
// container labelled with the test's name. Register it before starting
// agents so it runs after they stop.
func removeTestContainers(t *testing.T, api *client.Client) {
	t.Cleanup(func() {
		for _, c := range containersWithLabel(t, api, testLabel, t.Name()) {
			ctx, cancel := context.WithTimeout(context.Background(), dockerWait)
			_, err := api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
			cancel()
			if err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("cleanup: remove container %s: %v", c.ID, err)
			}
		}
	})
}

// allocContainer waits for the one container of allocID and returns it.
func allocContainer(t *testing.T, api *client.Client, allocID string) container.InspectResponse {
	t.Helper()
	var found []container.Summary
	waitFor(t, dockerWait, "the allocation's container", func() bool {
		found = containersWithLabel(t, api, docker.LabelAllocID, allocID)
		return len(found) > 0
	})
	if len(found) != 1 {
		t.Fatalf("allocation %s has %d containers, want 1", allocID, len(found))
	}
	return inspectContainer(t, api, found[0].ID)
}

func inspectContainer(t *testing.T, api *client.Client, id string) container.InspectResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dockerWait)
	defer cancel()
	res, err := api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect container %s: %v", id, err)
	}
	return res.Container
}

// waitContainersGone waits until the engine has no container of allocID.
func waitContainersGone(t *testing.T, api *client.Client, allocID string) {
	t.Helper()
	waitFor(t, dockerWait, "the allocation's container to be removed", func() bool {
		return len(containersWithLabel(t, api, docker.LabelAllocID, allocID)) == 0
	})
}

// waitLogs waits until `drover alloc logs` of the task contains want,
// and returns the output.
func waitLogs(t *testing.T, a *agentProc, allocID, task, want string) string {
	t.Helper()
	var out string
	waitFor(t, dockerWait, fmt.Sprintf("alloc logs to show %q", want), func() bool {
		r := a.drover("alloc", "logs", allocID, task)
		out = r.stdout
		return r.code == 0 && strings.Contains(out, want)
	})
	return out
}

// taskEvent is an event of a task as the servers report it.
type taskEvent struct{ Type, Message string }

func taskEvents(t *testing.T, a *agentProc, allocID, task string) []taskEvent {
	t.Helper()
	var alloc struct {
		TaskStates map[string]struct{ Events []taskEvent }
	}
	if code := a.getJSON("/v1/allocation/"+allocID, &alloc); code != 200 {
		t.Fatalf("GET allocation %s: status %d", allocID, code)
	}
	return alloc.TaskStates[task].Events
}

// TestE2E_DockerJob: a docker job of a FROM scratch image built here
// runs in a container labelled with its allocation, its output is read
// with `drover alloc logs`, and `job stop` removes the container.
func TestE2E_DockerJob(t *testing.T) {
	api := dockerEngine(t)
	image := dockerHelloImage(t, api)
	removeTestContainers(t, api)
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-d", ports, 4))

	runJob(t, a, dir, dockerJobSpec{id: "docker-web", jobType: "service", image: image, test: t.Name(), line: "hello-from-docker"})
	al := a.waitAlloc("docker-web", "running")
	waitLogs(t, a, al.ID, "main", "hello-from-docker")

	c := allocContainer(t, api, al.ID)
	if !c.State.Running {
		t.Errorf("container %s state: got %s, want running", c.ID, c.State.Status)
	}
	for key, want := range map[string]string{docker.LabelTaskName: "main", docker.LabelJobName: "docker-web"} {
		if got := c.Config.Labels[key]; got != want {
			t.Errorf("container label %s: got %q, want %q", key, got, want)
		}
	}
	if got := c.Config.Image; got != image {
		t.Errorf("container image: got %q, want %q", got, image)
	}
	if got := c.HostConfig.DeviceRequests; len(got) != 0 {
		t.Errorf("container of a job without GPUs has device requests %+v", got)
	}

	stopJob(t, a, "docker-web")
	waitContainersGone(t, api, al.ID)
	if got := a.waitAlloc("docker-web", "complete", "failed"); got.ClientStatus != "complete" {
		t.Errorf("allocation after stop: got %s, want complete", got.ClientStatus)
	}
}

// engineProxy passes a client's engine API calls through to the real
// engine, and inspects each container just before its start request is
// passed on: what the container was created with, even when the start
// then fails and its creator removes it.
type engineProxy struct {
	endpoint string // unix:///path for docker_endpoint

	mu      sync.Mutex
	created map[string]container.InspectResponse // by container ID
	errs    []error
}

var startPath = regexp.MustCompile(`^(/v[0-9.]+)?/containers/([^/]+)/start$`)

func startEngineProxy(t *testing.T, api *client.Client) *engineProxy {
	t.Helper()
	host, err := client.ParseHostURL(api.DaemonHost())
	if err != nil {
		t.Fatalf("engine address %q: %v", api.DaemonHost(), err)
	}
	network, addr := host.Scheme, host.Host // "unix", path or "tcp", host:port
	// A short path: unix socket paths are limited to about 100 bytes.
	sockDir, err := os.MkdirTemp("", "dpx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "engine.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listen %s: %v", sock, err)
	}
	p := &engineProxy{endpoint: "unix://" + sock, created: map[string]container.InspectResponse{}}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker" },
		FlushInterval: -1,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}},
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := startPath.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodPost {
			p.record(r.Context(), api, m[2])
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p.ping(t)
	return p
}

// ping checks that the engine answers through the proxy.
func (p *engineProxy) ping(t *testing.T) {
	t.Helper()
	api, err := client.New(client.WithHost(p.endpoint))
	if err != nil {
		t.Fatalf("client for the engine proxy: %v", err)
	}
	defer api.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dockerWait)
	defer cancel()
	if _, err := api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatalf("ping the engine through the proxy: %v", err)
	}
}

func (p *engineProxy) record(ctx context.Context, api *client.Client, id string) {
	res, err := api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("inspect %s before start: %w", id, err))
		return
	}
	p.created[res.Container.ID] = res.Container
}

// startedFor returns the containers of allocID that were asked to start.
func (p *engineProxy) startedFor(t *testing.T, allocID string) []container.InspectResponse {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, err := range p.errs {
		t.Errorf("engine proxy: %v", err)
	}
	var out []container.InspectResponse
	for _, c := range p.created {
		if c.Config != nil && c.Config.Labels[docker.LabelAllocID] == allocID {
			out = append(out, c)
		}
	}
	return out
}

// TestE2E_DockerGPU: a docker job asking for 2 of 4 simulated GPUs gets
// a container whose device request names exactly the allocation's two
// GPU UUIDs. Without the NVIDIA runtime the engine cannot start it, so
// the agent talks to the engine through a recording proxy that inspects
// the container the driver created just before the driver's start call
// reaches the engine; the task then fails with the engine's nvidia error
// and the driver removes the container.
func TestE2E_DockerGPU(t *testing.T) {
	api := dockerEngine(t)
	image := dockerHelloImage(t, api)
	removeTestContainers(t, api)
	proxy := startEngineProxy(t, api)
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	cfg := agentConfig(t, dir, "node-g", ports, 4)
	withEndpoint(t, cfg, proxy.endpoint)
	a := startAgent(t, ports[0], "-config", cfg)

	runJob(t, a, dir, dockerJobSpec{
		id: "docker-gpu", jobType: "batch", image: image, test: t.Name(), line: "gpu", gpus: 2,
		group: `restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }`,
	})
	al := a.waitAlloc("docker-gpu", "failed", "complete")
	if al.ClientStatus != "failed" {
		t.Fatalf("allocation status: got %s, want failed (no NVIDIA runtime here)", al.ClientStatus)
	}
	gpus := al.gpus()
	if len(gpus) != 2 || gpus[0] == gpus[1] {
		t.Fatalf("allocation GPUs: got %v, want two distinct", gpus)
	}
	nodeGPUs := a.nodeGPUs(al.NodeID)
	for _, id := range gpus {
		if !slices.Contains(nodeGPUs, id) {
			t.Errorf("allocated GPU %s is not one of the node's %v", id, nodeGPUs)
		}
	}

	started := proxy.startedFor(t, al.ID)
	if len(started) != 1 {
		t.Fatalf("containers of the allocation asked to start: got %d, want 1", len(started))
	}
	reqs := started[0].HostConfig.DeviceRequests
	if len(reqs) != 1 {
		t.Fatalf("DeviceRequests: got %+v, want one request", reqs)
	}
	if got := sortedCopy(reqs[0].DeviceIDs); !slices.Equal(got, gpus) {
		t.Errorf("DeviceRequests[0].DeviceIDs: got %v, want the allocation's %v", got, gpus)
	}
	if reqs[0].Driver != "nvidia" || !slices.EqualFunc(reqs[0].Capabilities, [][]string{{"gpu"}}, slices.Equal) {
		t.Errorf("DeviceRequests[0]: got driver %q capabilities %v, want nvidia [[gpu]]", reqs[0].Driver, reqs[0].Capabilities)
	}

	var failure string
	for _, ev := range taskEvents(t, a, al.ID, "main") {
		if ev.Type == "Driver Failure" {
			failure = ev.Message
		}
	}
	if !strings.Contains(failure, "nvidia") {
		t.Errorf("Driver Failure event: got %q, want the engine's error about the nvidia device request", failure)
	}
	waitContainersGone(t, api, al.ID)
}

// withEndpoint points the agent config's docker driver at endpoint.
func withEndpoint(t *testing.T, cfgPath, endpoint string) {
	t.Helper()
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "client {\n  enabled = true\n"
	if !bytes.Contains(b, []byte(anchor)) {
		t.Fatalf("agent config has no %q to extend:\n%s", anchor, b)
	}
	out := strings.Replace(string(b), anchor, anchor+fmt.Sprintf("  docker_endpoint = %q\n", endpoint), 1)
	if err := os.WriteFile(cfgPath, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestE2E_DockerReattach: a docker task survives its agent being
// SIGKILLed; the agent started again on the same config re-attaches to
// the same container, keeps the allocation running with no replacement,
// reads the output written while it was down exactly once, and `job stop`
// then removes the container.
func TestE2E_DockerReattach(t *testing.T) {
	api := dockerEngine(t)
	image := dockerHelloImage(t, api)
	removeTestContainers(t, api)
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	cfg := agentConfig(t, dir, "node-dr", ports, 1)
	a := startAgent(t, ports[0], "-config", cfg)

	runJob(t, a, dir, dockerJobSpec{id: "docker-sleeper", jobType: "service", image: image, test: t.Name(), line: "hello-before-kill"})
	before := a.waitAlloc("docker-sleeper", "running")
	waitLogs(t, a, before.ID, "main", "hello-before-kill")
	c1 := allocContainer(t, api, before.ID)

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatalf("SIGKILL agent: %v", err)
	}
	<-a.done
	if c := inspectContainer(t, api, c1.ID); !c.State.Running {
		t.Fatalf("container %s is %s after its agent was killed, want running", c1.ID, c.State.Status)
	}
	signalContainer(t, api, c1.ID) // output while no agent reads it: usr1-1

	a2 := startAgent(t, ports[0], "-config", cfg)
	waitFor(t, dockerWait, "the restarted client to report the task re-attached", func() bool {
		return allocHasEvent(a2, before.ID, "main", "Reattached")
	})
	c2 := inspectContainer(t, api, c1.ID)
	if !c2.State.Running || c2.State.StartedAt != c1.State.StartedAt {
		t.Errorf("container after restart: running %v started %s, want running, started %s",
			c2.State.Running, c2.State.StartedAt, c1.State.StartedAt)
	}
	if all := containersWithLabel(t, api, docker.LabelAllocID, before.ID); len(all) != 1 || all[0].ID != c1.ID {
		t.Errorf("allocation's containers after restart: got %d, want only %s", len(all), c1.ID)
	}
	allocs := a2.jobAllocs("docker-sleeper")
	if len(allocs) != 1 || allocs[0].ID != before.ID || allocs[0].ClientStatus != "running" {
		t.Fatalf("allocations after restart = %+v, want only %s, running", allocs, before.ID)
	}

	signalContainer(t, api, c1.ID) // output after re-attach: usr1-2
	logs := waitLogs(t, a2, before.ID, "main", "usr1-2")
	for _, line := range []string{"hello-before-kill", "usr1-1", "usr1-2"} {
		if n := strings.Count(logs, line+"\n"); n != 1 {
			t.Errorf("alloc logs hold %q %d times, want once:\n%s", line, n, logs)
		}
	}

	stopJob(t, a2, "docker-sleeper")
	waitContainersGone(t, api, before.ID)
	a2.waitAlloc("docker-sleeper", "complete")
	if allocs := a2.jobAllocs("docker-sleeper"); len(allocs) != 1 {
		t.Errorf("job has %d allocations after stop, want 1", len(allocs))
	}
}

// signalContainer sends SIGUSR1 to the container's process.
func signalContainer(t *testing.T, api *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dockerWait)
	defer cancel()
	if _, err := api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "USR1"}); err != nil {
		t.Fatalf("signal container %s: %v", id, err)
	}
}
