package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const sleeperJob = `job "sleeper" {
  type        = "service"
  datacenters = ["dc1"]

  group "g" {
    task "sleep" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo PID=$$; exec sleep 600"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

var pidLine = regexp.MustCompile(`PID=(\d+)`)

// TestE2E_ReattachAfterAgentKill: a raw_exec task survives its agent
// being SIGKILLed; the agent started again on the same config re-attaches
// to the same process, keeps the same allocation running with no
// replacement, and `job stop` then kills that process.
func TestE2E_ReattachAfterAgentKill(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	cfg := agentConfig(t, dir, "node-r", ports, 1)
	a := startAgent(t, ports[0], "-config", cfg)

	if r := a.drover("job", "run", "-detach", writeFile(t, dir, "sleeper.hcl", sleeperJob)); r.code != 0 {
		t.Fatalf("job run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	before := a.waitAlloc("sleeper", "running")
	pid := taskPID(t, a, before.ID)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // if the test fails midway

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatalf("SIGKILL agent: %v", err)
	}
	<-a.done
	if !processAlive(pid) {
		t.Fatalf("task %d died with its agent", pid)
	}

	a2 := startAgent(t, ports[0], "-config", cfg)
	waitFor(t, 30*time.Second, "the restarted client to report the task re-attached", func() bool {
		return allocHasEvent(a2, before.ID, "sleep", "Reattached")
	})
	if !processAlive(pid) {
		t.Fatalf("task %d is gone after the agent restart", pid)
	}
	allocs := a2.jobAllocs("sleeper")
	if len(allocs) != 1 || allocs[0].ID != before.ID || allocs[0].ClientStatus != "running" {
		t.Fatalf("allocations after restart = %+v, want only %s, running", allocs, before.ID)
	}
	if got := taskPID(t, a2, before.ID); got != pid {
		t.Errorf("log says PID %d, want the first run's %d (started twice?)", got, pid)
	}

	if r := a2.drover("job", "stop", "-detach", "sleeper"); r.code != 0 {
		t.Fatalf("job stop: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 20*time.Second, fmt.Sprintf("task %d to be killed by job stop", pid), func() bool {
		return !processAlive(pid)
	})
	a2.waitAlloc("sleeper", "complete")
	if allocs := a2.jobAllocs("sleeper"); len(allocs) != 1 {
		t.Errorf("job has %d allocations after stop, want 1", len(allocs))
	}
}

// taskPID reads the PID the sleeper task printed, via `drover alloc logs`.
func taskPID(t *testing.T, a *agentProc, allocID string) int {
	t.Helper()
	var pid int
	waitFor(t, 20*time.Second, "the task's PID in its log", func() bool {
		r := a.drover("alloc", "logs", allocID, "sleep")
		m := pidLine.FindStringSubmatch(r.stdout)
		if m == nil {
			return false
		}
		pid, _ = strconv.Atoi(m[1])
		return pid > 0
	})
	return pid
}

// processAlive reports whether pid runs (and is not a zombie).
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// allocHasEvent reports whether the servers' view of the allocation
// shows an event of type evType on task.
func allocHasEvent(a *agentProc, allocID, task, evType string) bool {
	var alloc struct {
		TaskStates map[string]struct {
			Events []struct{ Type string }
		}
	}
	if code := a.getJSON("/v1/allocation/"+allocID, &alloc); code != 200 {
		return false
	}
	for _, e := range alloc.TaskStates[task].Events {
		if e.Type == evType {
			return true
		}
	}
	return false
}
