package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rendezvousJob is a gang of four single-GPU torch ranks running bin,
// which writes its rank's line under out.
func rendezvousJob(bin, out string) string {
	return fmt.Sprintf(`job "ddp" {
  type        = "batch"
  datacenters = ["dc1"]

  group "train" {
    count = 4
    gang {
      min = 4
    }
    distributed {
      framework = "torch"
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "rank" {
      driver = "raw_exec"
      config {
        command = %q
        args    = [%q]
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
}
`, bin, out)
}

// TestE2E_GangRendezvousTwoNodes: a gang of four single-GPU allocations
// on two nodes of two simulated GPUs each rendezvous over TCP at
// MASTER_ADDR:MASTER_PORT (rank 0's implicit rendezvous port): rank 0
// hears from ranks 1..3, every rank sees world size 4, each rank 0..3
// runs once, and every allocation completes.
func TestE2E_GangRendezvousTwoNodes(t *testing.T) {
	dir := reachableDir(t)
	bin := filepath.Join(dir, "rendezvous")
	build := exec.Command("go", "build", "-o", bin, "./testdata/rendezvous")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the rendezvous program: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil || os.Chmod(out, 0o777) != nil {
		t.Fatal(err) // tasks run as nobody and write here
	}
	t.Cleanup(func() {
		if t.Failed() {
			logTaskLogs(t, dir)
		}
	})
	ports := [][]int{freePorts(t, 3), freePorts(t, 3), freePorts(t, 3)}
	srv := launchAgent(t, ports[0][0], "-config", soloServerConfig(t, dir, ports[0], 0))
	waitFor(t, 30*time.Second, "the server to lead", func() bool { return leaderOf(srv) != "" })
	servers := []string{fmt.Sprintf("127.0.0.1:%d", ports[0][1])}
	launchAgent(t, ports[1][0], "-config", clusterClientConfig(t, dir, "client-a", ports[1], servers, 2))
	launchAgent(t, ports[2][0], "-config", clusterClientConfig(t, dir, "client-b", ports[2], servers, 2))
	waitFor(t, 30*time.Second, "both client nodes ready", func() bool { return nodesReady(srv, 2) })

	if r := srv.drover("job", "run", "-detach", writeFile(t, dir, "ddp.hcl", rendezvousJob(bin, out))); r.code != 0 {
		t.Fatalf("job run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var allocs []allocStub
	waitFor(t, 120*time.Second, "four allocations complete", func() bool {
		allocs = srv.jobAllocs("ddp")
		done := 0
		for _, a := range allocs {
			if a.ClientStatus == "failed" {
				t.Fatalf("allocation %s failed: %+v", a.ID, allocs)
			}
			if a.ClientStatus == "complete" {
				done++
			}
		}
		return done == 4
	})
	if len(allocs) != 4 {
		t.Fatalf("%d allocations, want 4 (no replacement)", len(allocs))
	}
	nodes := map[string]int{}
	for _, a := range allocs {
		nodes[a.NodeID]++
	}
	if len(nodes) != 2 {
		t.Errorf("allocations on %d nodes (%v), want both nodes", len(nodes), nodes)
	}
	for r := range 4 {
		b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("rank-%d", r)))
		if err != nil {
			t.Fatalf("rank %d wrote nothing: %v", r, err)
		}
		want := fmt.Sprintf("rank=%d world=4", r)
		if r == 0 {
			want += " peers=1,2,3"
		}
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("rank %d: %q, want %q", r, got, want)
		}
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 4 {
		t.Errorf("%d rank files, want 4 (ranks 0..3 once each)", len(entries))
	}
}

// logTaskLogs logs every task log file under the agents' data dirs.
func logTaskLogs(t *testing.T, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "alloc", "*", "alloc", "logs", "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		t.Logf("%s:\n%s", f, b)
	}
}
