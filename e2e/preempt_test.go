package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// prioJob is a raw_exec batch job of count allocations of one GPU each at
// priority prio, whose task runs script with kill_signal SIGINT and a
// grace time of 5s.
func prioJob(id string, prio, count int, script string) string {
	return fmt.Sprintf(`job %q {
  type        = "batch"
  datacenters = ["dc1"]
  priority    = %d

  group "work" {
    count = %d
    task "work" {
      driver       = "raw_exec"
      kill_signal  = "SIGINT"
      kill_timeout = "5s"
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
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
`, id, prio, count, script)
}

type taskEventStub struct {
	Type    string
	Message string
	Details map[string]string
}

// allocEvents returns the events of the allocation's task.
func (a *agentProc) allocEvents(allocID, task string) []taskEventStub {
	var alloc struct {
		TaskStates map[string]struct{ Events []taskEventStub }
	}
	if code := a.getJSON("/v1/allocation/"+allocID, &alloc); code != 200 {
		a.t.Fatalf("GET allocation %s: status %d", allocID, code)
	}
	return alloc.TaskStates[task].Events
}

// TestE2E_Preemption: a priority-80 job on a full node preempts
// priority-20 allocations; the victims get their signal and grace time
// (and checkpoint in it), the priority-80 job runs, and the victims are
// replaced when it is done.
func TestE2E_Preemption(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-p", ports, 2))

	low := writeFile(t, dir, "low.hcl", prioJob("low", 20, 2,
		`trap 'echo checkpoint-$(cat $DROVER_ALLOC_DIR/DROVER_PREEMPTED); exit 0' INT; while :; do sleep 0.1; done`))
	if r := a.drover("job", "run", "-detach", low); r.code != 0 {
		t.Fatalf("job run low: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 30*time.Second, "both low allocations running", func() bool {
		n := 0
		for _, al := range a.jobAllocs("low") {
			if al.ClientStatus == "running" {
				n++
			}
		}
		return n == 2
	})
	first := map[string]bool{}
	for _, al := range a.jobAllocs("low") {
		first[al.ID] = true
	}

	high := writeFile(t, dir, "high.hcl", prioJob("high", 80, 1, "sleep 3"))
	plan := a.drover("job", "plan", high)
	if !strings.Contains(plan.stdout, "Preemptions (1):") || !strings.Contains(plan.stdout, `(job "low")`) {
		t.Errorf("job plan: want one preemption of low shown:\n%s", plan.stdout)
	}
	if r := a.drover("job", "run", "-detach", high); r.code != 0 {
		t.Fatalf("job run high: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	a.waitAlloc("high", "running", "complete")

	// Exactly one victim, told why and given its grace time.
	var victim string
	waitFor(t, 30*time.Second, "a preempted low allocation", func() bool {
		for _, al := range a.jobAllocs("low") {
			if first[al.ID] && al.DesiredStatus == "stop" && (al.ClientStatus == "complete" || al.ClientStatus == "failed") {
				victim = al.ID
				return true
			}
		}
		return false
	})
	var preempted *taskEventStub
	for _, ev := range a.allocEvents(victim, "work") {
		if ev.Type == "Preempted" {
			preempted = &ev
		}
	}
	if preempted == nil || preempted.Details["kill_signal"] != "SIGINT" || preempted.Details["kill_timeout"] != "5s" || preempted.Details["DROVER_PREEMPTED"] != "1" {
		t.Fatalf("victim %s Preempted event = %+v, want SIGINT, 5s and DROVER_PREEMPTED=1", victim, preempted)
	}
	if r := a.drover("alloc", "logs", victim); !strings.Contains(r.stdout, "checkpoint-1") {
		t.Errorf("victim's output %q, want it to have checkpointed on the signal", r.stdout)
	}

	// "high" ends; the victim's replacement runs.
	a.waitAlloc("high", "complete")
	waitFor(t, 30*time.Second, "low replaced after high finished", func() bool {
		for _, al := range a.jobAllocs("low") {
			if !first[al.ID] && al.ClientStatus == "running" {
				return true
			}
		}
		return false
	})
}
