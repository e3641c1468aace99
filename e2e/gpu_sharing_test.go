package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mpsAgentConfig is an agent (server and client) with one simulated 80
// GiB GPU shared in mps mode.
func mpsAgentConfig(t *testing.T, dir string, ports []int) string {
	t.Helper()
	return writeFile(t, dir, "mps.hcl", fmt.Sprintf(`
name       = "mps-node"
data_dir   = %q
bind_addr  = "127.0.0.1"
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
    count  = 1
    model  = "NVIDIA H100 80GB HBM3"
    memory = "80 GiB"
  }
  gpu_sharing {
    mode = "mps"
  }
}
`+rawExecPlugin, filepath.Join(dir, "data"), ports[0], ports[1], ports[2]))
}

// quarterJob is a batch job of count raw_exec tasks, each asking 20 GiB
// of one GPU; each writes its environment to envDir/<alloc ID> and then
// waits (at most a minute) for envDir/release.
func quarterJob(id string, count int, envDir string) string {
	script := fmt.Sprintf(`env > %[1]s/$DROVER_ALLOC_ID.tmp && mv %[1]s/$DROVER_ALLOC_ID.tmp %[1]s/$DROVER_ALLOC_ID; i=0; while [ ! -e %[1]s/release ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done`, envDir)
	return fmt.Sprintf(`job %q {
  type        = "batch"
  datacenters = ["dc1"]
  group "quarter" {
    count = %d
    task "share" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      resources {
        cpu    = 100
        memory = 64
        device "nvidia/gpu" {
          count  = 1
          memory = "20 GiB"
        }
      }
    }
  }
}
`, id, count, script)
}

// readEnv parses an env file a task wrote.
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("task env: %v", err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// Must-hold 1: on a node with one 80 GiB GPU in mps mode, four tasks
// asking 20 GiB run at once on the same GPU UUID with the MPS limits in
// their environment; a fifth waits with a reason that names GPU memory.
// The GPU is simulated, so no MPS daemon runs and the allocations say so.
func TestE2E_MPSQuartersShareOneGPU(t *testing.T) {
	dir := reachableDir(t)
	envDir := filepath.Join(dir, "env")
	if err := os.Mkdir(envDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(envDir, 0o777); err != nil { // the tasks' user writes there
		t.Fatal(err)
	}
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", mpsAgentConfig(t, dir, ports))
	t.Cleanup(func() { os.WriteFile(filepath.Join(envDir, "release"), nil, 0o644) })

	var nodes []struct{ ID string }
	if code := a.getJSON("/v1/nodes", &nodes); code != 200 || len(nodes) != 1 {
		t.Fatalf("nodes: status %d, %d nodes", code, len(nodes))
	}
	gpus := a.nodeGPUs(nodes[0].ID)
	if len(gpus) != 1 {
		t.Fatalf("node GPUs: got %v, want one", gpus)
	}
	gpu := gpus[0]

	job := writeFile(t, dir, "quarters.hcl", quarterJob("quarters", 5, envDir))
	r := a.drover("job", "run", job)
	if r.code != 2 || !strings.Contains(r.stdout+r.stderr, "GPU memory exhausted") {
		t.Fatalf("job run: exit %d, want 2 (not all placed) naming GPU memory\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	// Four run at once: every one has written its env and none may end
	// before the release file exists.
	var running []allocStub
	waitFor(t, 30*time.Second, "four allocations running", func() bool {
		running = running[:0]
		for _, al := range a.jobAllocs("quarters") {
			if _, err := os.Stat(filepath.Join(envDir, al.ID)); err == nil && al.ClientStatus == "running" {
				running = append(running, al)
			}
		}
		return len(running) == 4
	})
	if n := len(a.jobAllocs("quarters")); n != 4 {
		t.Fatalf("allocations: got %d, want 4 (the fifth waits)", n)
	}
	for _, al := range running {
		if got := al.gpus(); len(got) != 1 || got[0] != gpu {
			t.Errorf("alloc %s holds %v, want the one GPU %s", al.ID, got, gpu)
		}
		env := readEnv(t, filepath.Join(envDir, al.ID))
		want := map[string]string{
			"NVIDIA_VISIBLE_DEVICES":           gpu,
			"CUDA_VISIBLE_DEVICES":             gpu,
			"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=20480M",
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("alloc %s env %s: got %q, want %q", al.ID, k, env[k], v)
			}
		}
		if pipe := env["CUDA_MPS_PIPE_DIRECTORY"]; !strings.HasPrefix(pipe, filepath.Join(dir, "data")) || !strings.HasSuffix(pipe, filepath.Join(gpu, "pipe")) {
			t.Errorf("alloc %s CUDA_MPS_PIPE_DIRECTORY: got %q, want the GPU's pipe dir under the data dir", al.ID, pipe)
		}
		if v, ok := env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"]; ok {
			t.Errorf("alloc %s: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s for a memory-only slice", al.ID, v)
		}
		// The allocation says MPS is simulated here.
		var full struct {
			TaskStates map[string]struct {
				Events []struct{ Type, Message string }
			}
		}
		if code := a.getJSON("/v1/allocation/"+al.ID, &full); code != 200 {
			t.Fatalf("GET allocation %s: %d", al.ID, code)
		}
		said := false
		for _, e := range full.TaskStates["share"].Events {
			said = said || e.Type == "GPU Share" && strings.Contains(e.Message, "MPS simulated, no MPS daemon started")
		}
		if !said {
			t.Errorf("alloc %s events: %+v, want a GPU Share event saying MPS is simulated", al.ID, full.TaskStates["share"].Events)
		}
	}

	// The fifth waits, and job status says why.
	st := a.drover("job", "status", "quarters")
	if st.code != 0 || !strings.Contains(st.stdout, "Placement Failure") || !strings.Contains(st.stdout, "GPU memory exhausted, need 20 GiB free on one GPU") {
		t.Fatalf("job status: exit %d, want a placement failure naming GPU memory:\n%s%s", st.code, st.stdout, st.stderr)
	}

	// The four end: the fifth gets the GPU.
	if err := os.WriteFile(filepath.Join(envDir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "five allocations complete", func() bool {
		done := 0
		for _, al := range a.jobAllocs("quarters") {
			if al.ClientStatus == "complete" {
				done++
			}
		}
		return done == 5
	})
}
