package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fullAlloc is the part of /v1/allocation/<id> these tests read.
type fullAlloc struct {
	ID, Name, ClientStatus, DesiredStatus, DesiredDescription string
	CreateTime, ModifyTime                                    int64
	TaskStates                                                map[string]struct {
		State    string
		Restarts uint64
		Events   []struct{ Type, Message string }
	}
}

func (a *agentProc) alloc(id string) fullAlloc {
	a.t.Helper()
	var out fullAlloc
	if code := a.getJSON("/v1/allocation/"+id, &out); code != 200 {
		a.t.Fatalf("GET allocation %s: status %d", id, code)
	}
	return out
}

// eventTypes lists a task's event types in order.
func (f fullAlloc) eventTypes(task string) []string {
	var out []string
	for _, ev := range f.TaskStates[task].Events {
		out = append(out, ev.Type)
	}
	return out
}

// shJob is a one-task raw_exec job of type typ running script, with the
// given extra group blocks (restart, reschedule).
func shJob(id, typ, script, groupBlocks string) string {
	return fmt.Sprintf(`job %q {
  type        = %q
  datacenters = ["dc1"]

  group "g" {
%s
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`, id, typ, groupBlocks, script)
}

// TestE2E_RestartThenReschedule is the point 3: a batch task that
// exits 1 is restarted twice in place (its restart policy), then its
// allocation fails and is replaced once, 2 seconds later (its reschedule
// policy); the replacement fails the same way and, the one attempt used,
// is not replaced.
func TestE2E_RestartThenReschedule(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-r", ports, 1))

	policies := `
    restart {
      attempts = 2
      interval = "1m"
      delay    = "1s"
      mode     = "fail"
    }
    reschedule {
      attempts  = 1
      interval  = "1h"
      delay     = "2s"
      unlimited = false
    }`
	job := writeFile(t, dir, "flaky.hcl", shJob("flaky", "batch", "echo trying; exit 1", policies))
	if r := a.drover("job", "run", "-detach", job); r.code != 0 {
		t.Fatalf("job run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	first := a.alloc(a.waitAlloc("flaky", "failed").ID)
	checkRestartedThenFailed(t, first)

	var second fullAlloc
	waitFor(t, 30*time.Second, "a replacement allocation that failed too", func() bool {
		for _, al := range a.jobAllocs("flaky") {
			if al.ID != first.ID && al.ClientStatus == "failed" {
				second = a.alloc(al.ID)
				return true
			}
		}
		return false
	})
	if second.Name != first.Name {
		t.Errorf("replacement name: got %s, want %s", second.Name, first.Name)
	}
	// The group's 2s delay, not the batch default of 5s.
	if gap := time.Duration(second.CreateTime - first.ModifyTime); gap < 2*time.Second-100*time.Millisecond || gap > 4500*time.Millisecond {
		t.Errorf("replacement created %v after the failure, want about the 2s reschedule delay", gap)
	}
	checkRestartedThenFailed(t, second)

	// The one attempt is used: no third allocation. A wait with nothing
	// to poll for: give the servers longer than the delay to misbehave.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if n := len(a.jobAllocs("flaky")); n != 2 {
			t.Fatalf("allocations: got %d, want 2 (reschedule attempts exhausted)", n)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if r := a.drover("job", "status", "flaky"); !strings.Contains(r.stdout, "dead") {
		t.Errorf("job status: want the job dead, got\n%s", r.stdout)
	}
}

// checkRestartedThenFailed asserts the task of a failed allocation was
// restarted twice in place and then not restarted.
func checkRestartedThenFailed(t *testing.T, al fullAlloc) {
	t.Helper()
	types := al.eventTypes("t")
	restarts := 0
	for _, ty := range types {
		if ty == "Restarting" {
			restarts++
		}
	}
	ts := al.TaskStates["t"]
	if al.ClientStatus != "failed" || restarts != 2 || ts.Restarts != 2 {
		t.Errorf("allocation %s: got %s with %d Restarting events (Restarts %d), want failed after 2", al.ID, al.ClientStatus, restarts, ts.Restarts)
	}
	if len(types) == 0 || types[len(types)-1] != "Not Restarting" {
		t.Errorf("allocation %s events: got %v, want them to end with Not Restarting", al.ID, types)
	}
}

// TestE2E_AllocStopAndRestart stops a running service allocation with
// `drover alloc stop` (it is replaced by a new one of the same name) and
// restarts the replacement's task in place with `drover alloc restart`
// (same allocation, one restart, a Restart Signaled event), which its
// no-restarts policy does not count.
func TestE2E_AllocStopAndRestart(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-s", ports, 1))

	noRestarts := `
    restart {
      attempts = 0
      mode     = "fail"
    }`
	job := writeFile(t, dir, "web.hcl", shJob("web", "service", "echo up; exec sleep 600", noRestarts))
	if r := a.drover("job", "run", "-detach", job); r.code != 0 {
		t.Fatalf("job run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	orig := a.waitAlloc("web", "running")

	r := a.drover("alloc", "stop", orig.ID[:8])
	if r.code != 0 || !strings.Contains(r.stdout, "created to replace allocation") {
		t.Fatalf("alloc stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var repl allocStub
	waitFor(t, 30*time.Second, "original stopped and a replacement running", func() bool {
		stopped := false
		for _, al := range a.jobAllocs("web") {
			switch {
			case al.ID == orig.ID:
				stopped = al.DesiredStatus == "stop" && al.ClientStatus == "complete"
			case al.ClientStatus == "running":
				repl = al
			}
		}
		return stopped && repl.ID != ""
	})
	if got, want := a.alloc(repl.ID).Name, a.alloc(orig.ID).Name; got != want {
		t.Errorf("replacement name: got %s, want %s", got, want)
	}
	if d := a.alloc(orig.ID).DesiredDescription; d != "alloc was stopped by a user" {
		t.Errorf("stopped allocation's description: got %q", d)
	}

	if r := a.drover("alloc", "restart", repl.ID, "nope"); r.code == 0 || !strings.Contains(r.stderr, `no task "nope"`) {
		t.Errorf("alloc restart of an unknown task: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := a.drover("alloc", "restart", repl.ID[:8], "t"); r.code != 0 {
		t.Fatalf("alloc restart: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 30*time.Second, "the task restarted in place and running again", func() bool {
		al := a.alloc(repl.ID)
		types := al.eventTypes("t")
		return al.TaskStates["t"].Restarts == 1 && al.TaskStates["t"].State == "running" &&
			slices.Contains(types, "Restart Signaled") && types[len(types)-1] == "Started"
	})
	if al := a.alloc(repl.ID); al.ClientStatus != "running" {
		t.Errorf("restarted allocation: got %s, want still running", al.ClientStatus)
	}
	if n := len(a.jobAllocs("web")); n != 2 {
		t.Errorf("allocations after the restart: got %d, want 2 (no new one)", n)
	}
	if code, body := a.do("PUT", "/v1/client/allocation/"+orig.ID+"/restart", `{"TaskName": "t"}`); code != 409 && code != 404 {
		t.Errorf("restart of the stopped allocation: got %d %q, want 404 or 409", code, body)
	}
}
