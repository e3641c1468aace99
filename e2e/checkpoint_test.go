package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// counterJob is a priority-20 batch job of one single-GPU allocation
// with a checkpoint block, whose task counts, writing its counter to its
// checkpoint dir (and touching the checkpoint marker) each second, and
// starts from the counter it finds there.
const counterJob = `job "counter" {
  type        = "batch"
  datacenters = ["dc1"]
  priority    = 20

  group "work" {
    checkpoint {
      keep = 5
    }
    task "count" {
      driver       = "raw_exec"
      kill_signal  = "SIGINT"
      kill_timeout = "5s"
      config {
        command = "/bin/sh"
        args    = ["-c", <<EOT
d="$DROVER_CHECKPOINT_DIR"
n=$(cat "$d/counter" 2>/dev/null || echo 0)
echo "start resumed=$DROVER_RESUMED from=$n"
trap 'echo "stopped at $n"; exit 0' INT
while :; do
  n=$((n+1))
  echo $n > "$d/counter.tmp" && mv "$d/counter.tmp" "$d/counter"
  touch "$d/.drover-checkpoint"
  sleep 1
done
EOT
        ]
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
`

// TestE2E_CheckpointSurvivesPreemption (issue 22, must-hold 3): a task
// that counts into its checkpoint dir is preempted by a higher-priority
// job, is replaced when the GPU frees, and resumes from its last
// counter with DROVER_RESUMED=1; the dir survives until the job is
// purged, and then the client's GC removes it.
func TestE2E_CheckpointSurvivesPreemption(t *testing.T) {
	dir := reachableDir(t)
	root := filepath.Join(dir, "ckpt")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	extra := writeFile(t, dir, "ckpt.hcl", fmt.Sprintf("client {\n  checkpoint_root = %q\n  gc_interval = \"1s\"\n}\n", root))
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-c", ports, 1), "-config", extra)

	job := writeFile(t, dir, "counter.hcl", counterJob)
	if r := a.drover("job", "run", "-detach", job); r.code != 0 {
		t.Fatalf("job run counter: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	first := a.waitAlloc("counter", "running")
	counterFile := filepath.Join(root, "default", "counter", "work", "0", "counter")
	counter := func() int {
		b, _ := os.ReadFile(counterFile)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	waitFor(t, 30*time.Second, "the counter at 3", func() bool { return counter() >= 3 })

	high := writeFile(t, dir, "high.hcl", prioJob("high", 80, 1, "sleep 3"))
	if r := a.drover("job", "run", "-detach", high); r.code != 0 {
		t.Fatalf("job run high: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 30*time.Second, "the counter preempted", func() bool {
		for _, al := range a.jobAllocs("counter") {
			if al.ID == first.ID {
				return al.ClientStatus == "complete" || al.ClientStatus == "failed"
			}
		}
		return false
	})
	last := counter()
	if r := a.drover("alloc", "logs", first.ID, "count"); !strings.Contains(r.stdout, "start resumed=0 from=0") ||
		!strings.Contains(r.stdout, fmt.Sprintf("stopped at %d", last)) {
		t.Errorf("preempted task's output %q, want a fresh start and a stop at %d", r.stdout, last)
	}

	// "high" ends; the replacement resumes from the last counter.
	var next string
	waitFor(t, 60*time.Second, "counter replaced after high finished", func() bool {
		for _, al := range a.jobAllocs("counter") {
			if al.ID != first.ID && al.ClientStatus == "running" {
				next = al.ID
				return true
			}
		}
		return false
	})
	waitFor(t, 30*time.Second, "the replacement's start line", func() bool {
		r := a.drover("alloc", "logs", next, "count")
		return strings.Contains(r.stdout, fmt.Sprintf("start resumed=1 from=%d\n", last))
	})
	waitFor(t, 30*time.Second, "job status to show the last checkpoint", func() bool {
		r := a.drover("job", "status", "counter")
		return strings.Contains(r.stdout, "Checkpoints") && strings.Contains(r.stdout, "counter.work[0]")
	})

	// Stopped, the dir stays; purged, the client's GC removes it.
	jobDir := filepath.Join(root, "default", "counter")
	if r := a.drover("job", "stop", "counter"); r.code != 0 {
		t.Fatalf("job stop: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	a.waitAlloc("counter", "complete", "failed")
	if _, err := os.Stat(counterFile); err != nil {
		t.Fatalf("after job stop: %v, want the checkpoint kept", err)
	}
	if r := a.drover("job", "stop", "-purge", "counter"); r.code != 0 {
		t.Fatalf("job stop -purge: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 30*time.Second, "the purged job's checkpoint dir removed", func() bool {
		_, err := os.Stat(jobDir)
		return os.IsNotExist(err)
	})
}
