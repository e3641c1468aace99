package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// allocPort is a port an allocation holds, as the API reports it.
type allocPort struct {
	Label  string
	Value  int
	To     int
	HostIP string
}

// allocPorts returns the ports allocation id holds.
func (a *agentProc) allocPorts(id string) []allocPort {
	a.t.Helper()
	var alloc struct {
		AllocatedResources struct{ Shared struct{ Ports []allocPort } }
	}
	if code := a.getJSON("/v1/allocation/"+id, &alloc); code != 200 {
		a.t.Fatalf("GET allocation %s: status %d", id, code)
	}
	return alloc.AllocatedResources.Shared.Ports
}

// buildHello compiles testdata/dockerhello into dir for raw_exec tasks.
func buildHello(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-o", bin, "./testdata/dockerhello")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build dockerhello: %v\n%s", err, out)
	}
	return bin
}

// waitHTTP waits until GET url answers 200 with a body holding want.
func waitHTTP(t *testing.T, url, want string) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	var last string
	waitFor(t, 30*time.Second, fmt.Sprintf("GET %s to answer %q (last: %s)", url, want, last), func() bool {
		resp, err := c.Get(url)
		if err != nil {
			last = err.Error()
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		last = fmt.Sprintf("%d %q", resp.StatusCode, body)
		return resp.StatusCode == 200 && strings.Contains(string(body), want)
	})
}

// TestE2E_InferenceServicePort: a service job with a dynamic port, as a
// Nomad user writes it, runs a real HTTP server under raw_exec on the
// port the scheduler chose from the client's dynamic range (one free
// port here, so the choice is known), told through NOMAD_ADDR_http and
// NOMAD_PORT_http; the test reaches it there, and `alloc status` shows
// the address.
func TestE2E_InferenceServicePort(t *testing.T) {
	dir := reachableDir(t)
	bin := buildHello(t, dir)
	ports := freePorts(t, 4)
	dyn := ports[3]
	cfg := writeFile(t, dir, "agent.hcl", fmt.Sprintf(
		"ports {\n  http = %d\n  rpc = %d\n  serf = %d\n}\nclient {\n  min_dynamic_port = %d\n  max_dynamic_port = %d\n  reserved {\n    reserved_ports = \"22\"\n  }\n}\n",
		ports[0], ports[1], ports[2], dyn, dyn))
	a := startAgent(t, ports[0], "-dev", "-config", cfg)

	job := writeFile(t, dir, "inference.hcl", fmt.Sprintf(`job "inference" {
  datacenters = ["dc1"]

  group "api" {
    network {
      port "http" {}
    }

    task "server" {
      driver = "raw_exec"
      config {
        command = %q
        args    = ["served", "${NOMAD_PORT_http}", "${NOMAD_ALLOC_ID}"]
      }
      env {
        HELLO_HTTP = "${NOMAD_ADDR_http}"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`, bin))
	if r := a.drover("job", "run", "-detach", job); r.code != 0 {
		t.Fatalf("job run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	al := a.waitAlloc("inference", "running")
	got := a.allocPorts(al.ID)
	if len(got) != 1 || got[0].Label != "http" || got[0].Value != dyn || got[0].HostIP != "127.0.0.1" {
		t.Fatalf("allocated ports: got %+v, want http on 127.0.0.1:%d", got, dyn)
	}
	addr := "127.0.0.1:" + strconv.Itoa(dyn)
	waitHTTP(t, "http://"+addr+"/v1/models", fmt.Sprintf("served %d %s", dyn, al.ID))

	r := a.drover("alloc", "status", al.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "Allocation Addresses") || !strings.Contains(r.stdout, addr) {
		t.Errorf("alloc status: exit %d, want the address %s:\n%s%s", r.code, addr, r.stdout, r.stderr)
	}

	// The range has one port: a second such job cannot be placed, and
	// says why.
	second := writeFile(t, dir, "second.hcl", strings.Replace(mustRead(t, job), `job "inference"`, `job "second"`, 1))
	if r := a.drover("job", "run", "-detach", second); r.code != 0 {
		t.Fatalf("job run second: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 30*time.Second, "the second job to report its ports exhausted", func() bool {
		r := a.drover("job", "status", "second")
		return strings.Contains(r.stdout, fmt.Sprintf("dynamic ports: none free in %d-%d", dyn, dyn))
	})
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestE2E_DockerPortMapping: a docker task lists its group's port in
// `ports`; the container's port 8080 (the port's "to") is published on
// the node's address at the host port the scheduler chose, and the test
// reaches the server in the container there.
func TestE2E_DockerPortMapping(t *testing.T) {
	api := dockerEngine(t)
	image := dockerHelloImage(t, api)
	removeTestContainers(t, api)
	dir := reachableDir(t)
	ports := freePorts(t, 4)
	dyn := ports[3]
	extra := writeFile(t, dir, "ports.hcl", fmt.Sprintf("client {\n  min_dynamic_port = %d\n  max_dynamic_port = %d\n}\n", dyn, dyn))
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-p", ports[:3], 0), "-config", extra)

	job := writeFile(t, dir, "docker-port.hcl", fmt.Sprintf(`job "docker-port" {
  datacenters = ["dc1"]

  group "g" {
    network {
      port "http" {
        to = 8080
      }
    }

    task "main" {
      driver = "docker"
      config {
        image  = %q
        args   = ["served-by-docker", "${NOMAD_HOST_PORT_http}"]
        ports  = ["http"]
        labels = { %s = %q }
      }
      env {
        HELLO_HTTP = ":${NOMAD_PORT_http}"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`, image, testLabel, t.Name()))
	if r := a.drover("job", "run", "-detach", job); r.code != 0 {
		t.Fatalf("job run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	al := a.waitAlloc("docker-port", "running")
	if got := a.allocPorts(al.ID); len(got) != 1 || got[0].Value != dyn || got[0].To != 8080 {
		t.Fatalf("allocated ports: got %+v, want http %d -> 8080", got, dyn)
	}
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/", dyn), fmt.Sprintf("served-by-docker %d", dyn))

	stopJob(t, a, "docker-port")
	waitContainersGone(t, api, al.ID)
}
