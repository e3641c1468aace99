package command

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/command/agent"
	"github.com/droverhq/drover/drivers/drivertest"
)

// startQuotaAgent starts an in-process dev agent (server and client, with
// gpus simulated GPUs) on kernel-chosen loopback ports and returns its
// HTTP address once its node is ready.
func startQuotaAgent(t *testing.T, gpus int) string {
	t.Helper()
	cfg := agent.DevConfig()
	cfg.Ports = &agent.PortsConfig{}
	cfg.DataDir = drivertest.ReachableTempDir(t)
	cfg.LogLevel = "WARN"
	cfg.DevGPUs = gpus
	a, err := agent.NewAgent(cfg, io.Discard)
	if err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	base := "http://" + a.HTTPAddr()
	nsWaitUntil(t, 15*time.Second, "the dev node is ready", func() bool {
		resp, err := http.Get(base + "/v1/nodes")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var nodes []struct{ Status string }
		_ = json.NewDecoder(resp.Body).Decode(&nodes)
		return len(nodes) == 1 && nodes[0].Status == "ready"
	})
	return base
}

// nsWaitUntil polls cond every 50 ms until it holds, failing the test after
// timeout.
func nsWaitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: not %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func nsWriteFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func quotaFileGPUs(gpus string) string {
	return `quota "team-a-gpus" {
  description = "Team A's GPUs"
  limit {
    region = "global"
    region_limit {
      gpu        = ` + gpus + `
      gpu_memory = "160 GiB"
    }
  }
}`
}

const teamJobHCL = `job "train" {
  type = "batch"
  datacenters = ["dc1"]
  group "train" {
    count = 2
    task "train" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["30"]
      }
      resources {
        cpu    = 100
        memory = 64
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}`

// TestNamespaceAndQuotaCommands runs the namespace and quota commands
// against a dev agent with 2 GPUs: a quota of 1 GPU holds the second
// allocation of a job in team-a back with the quota named, and raising
// the quota places it.
func TestNamespaceAndQuotaCommands(t *testing.T) {
	addr := startQuotaAgent(t, 2)
	expect := func(wantCode int, want string, args ...string) string {
		t.Helper()
		code, stdout, stderr := run(t, addr, args...)
		if code != wantCode || !strings.Contains(stdout+stderr, want) {
			t.Fatalf("drover %s: got exit %d, output %q %q; want exit %d with %q",
				strings.Join(args, " "), code, stdout, stderr, wantCode, want)
		}
		return stdout
	}
	expect(0, `Successfully applied quota specification "team-a-gpus"!`, "quota", "apply", nsWriteFile(t, "q.hcl", quotaFileGPUs("1")))
	expect(0, `Successfully applied namespace "team-a"!`, "namespace", "apply", "-description", "Team A", "-quota", "team-a-gpus", "team-a")
	list := expect(0, "team-a", "namespace", "list")
	if !strings.Contains(list, "team-a-gpus") || !strings.Contains(list, "default") {
		t.Errorf("namespace list = %q, want default and team-a with its quota", list)
	}
	expect(0, "team-a-gpus", "quota", "list")

	// The job file names no namespace: -namespace puts it in team-a.
	out := expect(exitNotPlaced, `Quota limit hit: quota "team-a-gpus" exhausted: gpu 1 of 1 used, need 1`,
		"job", "run", "-namespace", "team-a", nsWriteFile(t, "train.hcl", teamJobHCL))
	if !strings.Contains(out, "waiting for its namespace's quota") {
		t.Errorf("job run output = %q, want the quota note on the blocked evaluation", out)
	}
	status := expect(0, "Namespaces  = team-a", "quota", "status", "team-a-gpus")
	if !strings.Contains(status, "1 / 1") || !strings.Contains(status, "80 GiB / 160 GiB") {
		t.Errorf("quota status = %q, want 1 / 1 GPUs and 80 GiB / 160 GiB", status)
	}

	// Raising the quota places the second allocation.
	expect(0, "Successfully applied", "quota", "apply", nsWriteFile(t, "q2.hcl", quotaFileGPUs("2")))
	nsWaitUntil(t, 10*time.Second, "both allocations placed after the raise", func() bool {
		_, stdout, _ := run(t, addr, "quota", "status", "team-a-gpus")
		return strings.Contains(stdout, "2 / 2") && strings.Contains(stdout, "160 GiB / 160 GiB")
	})
	expect(0, "2 / 2", "namespace", "status", "team-a")

	// Refusals: a message and exit 1, nothing changed.
	expect(exitError, "cannot be deleted", "namespace", "delete", "default")
	expect(exitError, "has jobs", "namespace", "delete", "team-a")
	expect(exitError, "used by a namespace", "quota", "delete", "team-a-gpus")
	expect(exitError, `namespace "nope" not found`, "namespace", "status", "nope")
	expect(exitError, `quota "nope" not found`, "quota", "status", "nope")
	expect(exitError, `quota "nope" does not exist`, "namespace", "apply", "-quota", "nope", "team-b")
	expect(exitError, "bad.hcl:2,", "quota", "apply", nsWriteFile(t, "bad.hcl", "quota \"q\" {\n  limit { regin = \"global\" }\n}"))
	expect(exitError, "one argument", "namespace", "apply")
	expect(exitError, `namespace "nope" does not exist`, "job", "run", "-namespace", "nope", nsWriteFile(t, "lost.hcl", teamJobHCL))

	// Detached from its quota and emptied, a namespace can go; so can
	// the quota then.
	expect(0, "Successfully applied", "namespace", "apply", "-quota=", "team-b")
	expect(0, `Successfully deleted namespace "team-b"!`, "namespace", "delete", "team-b")
	expect(0, "Successfully applied", "namespace", "apply", "-quota=", "team-a")
	if !strings.Contains(expect(0, "team-a", "namespace", "status", "team-a"), "Quota       = <none>") {
		t.Errorf("namespace status after -quota= still shows a quota")
	}
	expect(0, `Successfully deleted quota specification "team-a-gpus"!`, "quota", "delete", "team-a-gpus")
}
