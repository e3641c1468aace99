package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// serviceJob is a raw_exec task serving HTTP on port with a
// nomad-provider service and an http check, as a Nomad user writes it.
func serviceJob(dir string, port int) string {
	return fmt.Sprintf(`job "webapp" {
  datacenters = ["dc1"]

  group "web" {
    service {
      name     = "webapp"
      port     = "%d"
      provider = "nomad"
      tags     = ["http", "e2e"]

      check {
        type     = "http"
        path     = "/"
        interval = "1s"
        timeout  = "2s"
      }
    }

    task "server" {
      driver = "raw_exec"
      config {
        command = "python3"
        args    = ["-m", "http.server", "%d", "--bind", "127.0.0.1", "--directory", %q]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`, port, port, dir)
}

// TestE2E_NomadServiceWithHTTPCheck: the service of a running task shows
// up in /v1/service/<name> with the node's address and its port, its
// http check passes, the CLI lists it, and it is gone after job stop.
func TestE2E_NomadServiceWithHTTPCheck(t *testing.T) {
	needPython(t)
	dir := reachableDir(t)
	ports := freePorts(t, 4)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-svc", ports[:3], 1))
	job := writeFile(t, dir, "webapp.hcl", serviceJob(dir, ports[3]))
	if r := a.drover("job", "run", "-detach", job); r.code != 0 {
		t.Fatalf("job run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	alloc := a.waitAlloc("webapp", "running")

	type registration struct {
		ID, ServiceName, Namespace, NodeID, JobID, AllocID, Address string
		Port                                                        int
		Tags                                                        []string
	}
	var regs []registration
	waitFor(t, 30*time.Second, "the webapp service registered", func() bool {
		regs = nil
		return a.getJSON("/v1/service/webapp", &regs) == 200 && len(regs) == 1
	})
	r := regs[0]
	if r.Address != "127.0.0.1" || r.Port != ports[3] || r.AllocID != alloc.ID || r.JobID != "webapp" || r.Namespace != "default" {
		t.Errorf("registration %+v, want 127.0.0.1:%d of alloc %s", r, ports[3], alloc.ID)
	}

	waitFor(t, 30*time.Second, "the http check passing", func() bool {
		var checks map[string]struct{ Status, Output, Service string }
		if a.getJSON("/v1/client/allocation/"+alloc.ID+"/checks", &checks) != 200 {
			return false
		}
		for _, c := range checks {
			if c.Service == "webapp" && c.Status == "success" {
				return true
			}
		}
		return false
	})

	var list []struct {
		Namespace string
		Services  []struct {
			ServiceName string
			Tags        []string
		}
	}
	if code := a.getJSON("/v1/services", &list); code != 200 || len(list) != 1 || len(list[0].Services) != 1 ||
		list[0].Services[0].ServiceName != "webapp" || strings.Join(list[0].Services[0].Tags, ",") != "e2e,http" {
		t.Errorf("GET /v1/services: %d %+v", code, list)
	}
	if res := a.drover("service", "list"); res.code != 0 || !strings.Contains(res.stdout, "webapp") {
		t.Errorf("service list: %d %q %q", res.code, res.stdout, res.stderr)
	}
	// The official Go client decodes the registry's shapes.
	nc, err := nomad.NewClient(&nomad.Config{Address: a.addr})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := nc.Services().Get("webapp", nil); err != nil || len(got) != 1 || got[0].Port != ports[3] || got[0].AllocID != alloc.ID {
		t.Errorf("nomad api Services().Get: %+v, %v", got, err)
	}
	if got, _, err := nc.Services().List(nil); err != nil || len(got) != 1 || len(got[0].Services) != 1 || got[0].Services[0].ServiceName != "webapp" {
		t.Errorf("nomad api Services().List: %+v, %v", got, err)
	}
	if res := a.drover("service", "info", "webapp"); res.code != 0 || !strings.Contains(res.stdout, fmt.Sprintf("127.0.0.1:%d", ports[3])) {
		t.Errorf("service info: %d %q %q", res.code, res.stdout, res.stderr)
	}

	if res := a.drover("job", "stop", "-detach", "webapp"); res.code != 0 {
		t.Fatalf("job stop: %d %s %s", res.code, res.stdout, res.stderr)
	}
	waitFor(t, 30*time.Second, "the registration gone after job stop", func() bool {
		regs = nil
		return a.getJSON("/v1/service/webapp", &regs) == 200 && len(regs) == 0
	})
}

// needPython skips the test where python3 (its HTTP server) is missing;
// in CI (.ci/run installs it) a missing python3 fails it.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("python3 is not installed; .ci/run should have installed it")
	}
	t.Skip("python3 is not installed (apt-get install python3)")
}
