package e2e

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// historyJob holds one GPU; util, when set, is the utilisation its
// simulated GPU reports (the simulated_gpu_util group meta).
func historyJob(id, util string) string {
	meta := ""
	if util != "" {
		meta = fmt.Sprintf("    meta {\n      simulated_gpu_util = %q\n    }\n", util)
	}
	return fmt.Sprintf(`job %q {
  type        = "batch"
  datacenters = ["dc1"]
  group "g" {
%s    task "main" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "exec sleep 600"]
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
`, id, meta)
}

// withGPUHistory adds a short gpu_history block to a client config file.
func withGPUHistory(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "client {\n  enabled = true\n"
	if !strings.Contains(string(b), anchor) {
		t.Fatalf("%s has no %q", path, anchor)
	}
	cfg := strings.Replace(string(b), anchor, anchor+`  gpu_history {
    interval    = "250ms"
    window      = "2m"
    idle_window = "2s"
  }
`, 1)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type gpuHistory struct {
	NodeID, AllocID string
	GPUs            []struct {
		ID        string
		Simulated bool
		Samples   []struct{ GPUUtilPercent float64 }
	}
	Idle     bool
	IdleGPUs []string
}

// TestE2E_GPUHistory: a server and two client-only agents; the GPUs are
// on client-b. Asked of client-a (the node is remote to it), the API and
// the UI show every GPU's utilisation history, and the allocation whose
// simulated GPU reports 0% for the (test-short) idle window carries the
// idle-but-allocated warning; the busy one does not.
func TestE2E_GPUHistory(t *testing.T) {
	dir := reachableDir(t)
	ports := [][]int{freePorts(t, 3), freePorts(t, 3), freePorts(t, 3)}
	srv := launchAgent(t, ports[0][0], "-config", soloServerConfig(t, dir, ports[0], 0))
	waitFor(t, 30*time.Second, "the server to lead", func() bool { return leaderOf(srv) != "" })
	servers := []string{fmt.Sprintf("127.0.0.1:%d", ports[0][1])}
	via := launchAgent(t, ports[1][0], "-config", withGPUHistory(t, clusterClientConfig(t, dir, "client-a", ports[1], servers, 0)))
	launchAgent(t, ports[2][0], "-config", withGPUHistory(t, clusterClientConfig(t, dir, "client-b", ports[2], servers, 3)))
	waitFor(t, 30*time.Second, "both clients' nodes ready", func() bool { return nodesReady(srv, 2) })

	for id, util := range map[string]string{"idle-gpu": "0", "busy-gpu": ""} {
		if r := srv.drover("job", "run", "-detach", writeFile(t, dir, id+".hcl", historyJob(id, util))); r.code != 0 {
			t.Fatalf("job run %s: exit %d: %s%s", id, r.code, r.stdout, r.stderr)
		}
	}
	// Stop the jobs before the agents (which leave tasks running when
	// they stop), so that no task outlives the test.
	t.Cleanup(func() {
		for _, id := range []string{"idle-gpu", "busy-gpu"} {
			srv.drover("job", "stop", "-detach", id)
		}
		waitFor(t, 30*time.Second, "the tasks stopped", func() bool {
			for _, id := range []string{"idle-gpu", "busy-gpu"} {
				for _, al := range srv.jobAllocs(id) {
					if al.ClientStatus == "running" || al.ClientStatus == "pending" {
						return false
					}
				}
			}
			return true
		})
	})
	idle, busy := srv.waitAlloc("idle-gpu", "running"), srv.waitAlloc("busy-gpu", "running")
	if idle.NodeID != busy.NodeID {
		t.Fatalf("allocations on %s and %s, want both on the GPU node", idle.NodeID, busy.NodeID)
	}
	nodeID := idle.NodeID
	gpus := srv.nodeGPUs(nodeID)

	// The API, through client-a: the node's history has every GPU, the
	// idle allocation is flagged once its window passed, the busy one not.
	var nh gpuHistory
	waitFor(t, 20*time.Second, "the remote node's history", func() bool {
		return via.getJSON("/v1/client/gpus/history?node_id="+nodeID, &nh) == http.StatusOK && len(nh.GPUs) == 3 && len(nh.GPUs[2].Samples) > 1
	})
	for i, g := range nh.GPUs {
		if g.ID != gpus[i] || !g.Simulated {
			t.Errorf("node history GPU %d: got %s simulated=%v, want %s, simulated", i, g.ID, g.Simulated, gpus[i])
		}
	}
	var ih, bh gpuHistory
	waitFor(t, 20*time.Second, "the idle allocation flagged", func() bool {
		return via.getJSON("/v1/client/allocation/"+idle.ID+"/gpus/history", &ih) == http.StatusOK && ih.Idle
	})
	if len(ih.GPUs) != 1 || !slices.Equal(ih.IdleGPUs, []string{ih.GPUs[0].ID}) {
		t.Errorf("idle allocation: got GPUs %+v, idle %v; want its one GPU idle", ih.GPUs, ih.IdleGPUs)
	}
	if code := via.getJSON("/v1/client/allocation/"+busy.ID+"/gpus/history", &bh); code != http.StatusOK || bh.Idle || len(bh.GPUs) != 1 {
		t.Errorf("busy allocation: %d, idle %v, %d GPUs; want not idle, one GPU", code, bh.Idle, len(bh.GPUs))
	}

	b := newBrowser(t, via.addr) // skips here without chromium, outside CI
	shots := screenshotDir(t)

	// Node page: a sparkline in the tile of every GPU of the remote node.
	b.open("/nodes/" + nodeID)
	waitFor(t, 20*time.Second, "a sparkline per GPU", func() bool {
		return b.count(`[data-testid="gpu-tile"] [data-testid="gpu-sparkline"]`) == 3
	})
	for _, id := range gpus {
		sel := `[data-testid="gpu-tile"][data-gpu-id="` + id + `"] [data-testid="gpu-sparkline"][data-gpu-id="` + id + `"] polyline`
		if n := b.count(sel); n != 1 {
			t.Errorf("GPU %s tile: %d sparklines, want 1", id, n)
		}
	}
	b.screenshot(shots, "history-node")

	// The idle allocation's page warns; the busy one's shows its
	// sparkline and no warning.
	b.open("/allocations/" + idle.ID)
	b.waitText(`[data-testid="idle-warning"]`, 20*time.Second, func(s string) bool { return strings.Contains(s, "Allocated but idle") })
	if n := b.count(`[data-testid="alloc-gpu-history"] [data-testid="gpu-sparkline"]`); n != 1 {
		t.Errorf("idle allocation page: %d sparklines, want 1", n)
	}
	b.screenshot(shots, "history-idle-alloc")
	b.open("/allocations/" + busy.ID)
	waitFor(t, 20*time.Second, "the busy allocation's sparkline", func() bool {
		return b.count(`[data-testid="alloc-gpu-history"] [data-testid="gpu-sparkline"]`) == 1
	})
	if n := b.count(`[data-testid="idle-warning"]`); n != 0 {
		t.Errorf("busy allocation page: %d idle warnings, want none", n)
	}

	// Overview: the allocated GPUs' use, one busy and one idle.
	b.open("/")
	detail := b.waitText(`[data-testid="gpu-use-detail"]`, 20*time.Second, func(s string) bool { return strings.Contains(s, "GPUs busy") })
	if !strings.Contains(detail, "of 2 GPUs busy · 1 idle now") {
		t.Errorf("overview GPU use: %q, want 2 allocated GPUs, 1 idle", detail)
	}
	if used := b.text(`[data-testid="gpu-used"]`); !strings.HasSuffix(used, "%") || used == "0%" {
		t.Errorf("overview used of allocated: %q, want a non-zero percentage", used)
	}
	b.screenshot(shots, "history-overview")
	b.checkClean()
}
