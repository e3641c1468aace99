package command

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

const queueJobHCL = `job "sweep" {
  type        = "batch"
  datacenters = ["dc1"]
  queue       = "research"
  group "trial" {
    count = 3
    task "trial" {
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

// TestQueueCommands runs the queue commands against a dev agent with 2
// GPUs: a job run in a queue sends it, the queue shows the GPUs its
// allocations hold, its waiting job and its fair share, and bad input
// exits 1 with a message.
func TestQueueCommands(t *testing.T) {
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
	expect(0, `Successfully applied queue "research"!`, "queue", "apply", "-description", "R&D", "-weight", "3", "-guaranteed-gpus", "1", "research")
	// An update keeps what it does not name.
	expect(0, "Successfully applied", "queue", "apply", "-max-gpus", "2", "research")
	status := expect(0, "Weight          = 3", "queue", "status", "research")
	for _, want := range []string{"Description     = R&D", "Guaranteed GPUs = 1", "Max GPUs        = 2", "Fair Share      = - of 2 GPUs"} {
		if !strings.Contains(status, want) {
			t.Errorf("queue status = %q, want %q", status, want)
		}
	}

	// 3 single-GPU allocations on 2 GPUs: 2 run, the job waits for the third.
	expect(exitNotPlaced, "", "job", "run", nsWriteFile(t, "sweep.hcl", queueJobHCL))
	resp, err := http.Get(addr + "/v1/job/sweep")
	if err != nil {
		t.Fatal(err)
	}
	var job struct{ Queue string }
	err = json.NewDecoder(resp.Body).Decode(&job)
	resp.Body.Close()
	if err != nil || job.Queue != "research" {
		t.Fatalf("stored job queue = %q (%v), want research: job run must send it", job.Queue, err)
	}
	nsWaitUntil(t, 10*time.Second, "research holding 2 GPUs with 1 job waiting", func() bool {
		_, stdout, _ := run(t, addr, "queue", "status", "research")
		return strings.Contains(stdout, "GPUs Held       = 2") && strings.Contains(stdout, "Waiting Jobs    = 1")
	})
	expect(0, "Fair Share      = 2 of 2 GPUs", "queue", "status", "research")
	list := expect(0, "research", "queue", "list")
	for _, want := range []string{"Name      Weight  Guaranteed  Max        GPUs  Waiting  Fair Share",
		"default   1       0           unlimited  0     0        -",
		"research  3       1           2          2     1        2",
		"Fair shares divide 2 GPUs"} {
		if !strings.Contains(list, want) {
			t.Errorf("queue list = %q, want the line %q", list, want)
		}
	}

	// Refusals: a message and exit 1, nothing changed.
	expect(exitError, "weight 0: want 1 to 1000", "queue", "apply", "-weight", "0", "q")
	expect(exitError, "max GPUs 2 is below the 4 guaranteed", "queue", "apply", "-guaranteed-gpus", "4", "-max-gpus", "2", "q")
	expect(exitError, "max GPUs 1 is below the 2 guaranteed", "queue", "apply", "-max-gpus", "1", "-guaranteed-gpus", "2", "research")
	expect(exitError, "cannot be deleted", "queue", "delete", "default")
	expect(exitError, "queue has jobs", "queue", "delete", "research")
	expect(exitError, `queue "nope" not found`, "queue", "status", "nope")
	expect(exitError, `queue "nope": not found`, "queue", "delete", "nope")
	expect(exitError, "one argument", "queue", "apply")
	expect(exitError, `queue "nope" does not exist`, "job", "run",
		nsWriteFile(t, "lost.hcl", strings.Replace(queueJobHCL, `"research"`, `"nope"`, 1)))
	expect(exitError, "Invalid queue name", "job", "run",
		nsWriteFile(t, "bad.hcl", strings.Replace(queueJobHCL, `"research"`, `"no spaces"`, 1)))
	if status := expect(0, "research", "queue", "status", "research"); !strings.Contains(status, "Max GPUs        = 2") {
		t.Errorf("queue status after refusals = %q, want max 2 still", status)
	}

	// Purged of its job, the queue can go.
	expect(0, "", "job", "stop", "-purge", "-detach", "sweep")
	expect(0, `Successfully deleted queue "research"!`, "queue", "delete", "research")
}
