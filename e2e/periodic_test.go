package e2e

import (
	"net/url"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// everyTwoSeconds is a periodic batch job as a Nomad user writes it: a
// cron with seconds (7 fields), and no overlap.
const everyTwoSeconds = `
job "tick" {
  datacenters = ["dc1"]
  type        = "batch"

  periodic {
    crons            = ["*/2 * * * * * *"]
    prohibit_overlap = true
  }

  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo tick $NOMAD_JOB_ID"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// render is a parameterized job whose task prints its payload and meta.
const render = `
job "render" {
  datacenters = ["dc1"]
  type        = "batch"

  parameterized {
    payload       = "required"
    meta_required = ["who"]
    meta_optional = ["mood"]
  }

  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"payload=$(cat $NOMAD_TASK_DIR/local/input.txt) who=$NOMAD_META_who WHO=$NOMAD_META_WHO\""]
      }
      dispatch_payload {
        file = "input.txt"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// childStub is a job list entry.
type childStub struct {
	ID, ParentID, Status string
}

func (a *agentProc) children(parent string) []childStub {
	a.t.Helper()
	var jobs []childStub
	if code := a.getJSON("/v1/jobs?prefix="+url.QueryEscape(parent+"/"), &jobs); code != 200 {
		a.t.Fatalf("list jobs: status %d", code)
	}
	var out []childStub
	for _, j := range jobs {
		if j.ParentID == parent {
			out = append(out, j)
		}
	}
	return out
}

// TestE2E_Periodic: a periodic job registered with `job run` is not run
// at once; the leader launches children every 2 s whose tasks complete;
// job status shows the next launch and the children.
func TestE2E_Periodic(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-periodic", ports, 0))

	r := a.drover("job", "run", writeFile(t, dir, "tick.hcl", everyTwoSeconds))
	if r.code != 0 || !strings.Contains(r.stdout, "no evaluation was created") {
		t.Fatalf("job run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 30*time.Second, "two completed periodic children", func() bool {
		dead := 0
		for _, c := range a.children("tick") {
			if !strings.HasPrefix(c.ID, "tick/periodic-") {
				t.Fatalf("child ID %q, want tick/periodic-<unix>", c.ID)
			}
			if c.Status == "dead" {
				dead++
			}
		}
		return dead >= 2
	})
	var allocs []allocStub
	child := a.children("tick")[0].ID
	if code := a.getJSON("/v1/job/"+url.PathEscape(child)+"/allocations", &allocs); code != 200 || len(allocs) != 1 || allocs[0].ClientStatus != "complete" {
		t.Fatalf("child %s allocations: status %d, %+v; want one complete", child, code, allocs)
	}
	if logs := a.drover("alloc", "logs", allocs[0].ID); !strings.Contains(logs.stdout, "tick "+child) {
		t.Errorf("child logs = %q, want %q", logs.stdout, "tick "+child)
	}
	st := a.drover("job", "status", "tick")
	for _, want := range []string{"Periodic", "Next Periodic Launch", "Previously Launched Jobs", "tick/periodic-", "running"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("job status tick lacks %q:\n%s%s", want, st.stdout, st.stderr)
		}
	}
	if r := a.drover("job", "stop", "-detach", "tick"); r.code != 0 {
		t.Errorf("job stop: exit %d: %s", r.code, r.stderr)
	}
}

// TestE2E_PeriodicAndDispatchFromNomadClient: the official Nomad client's
// periodic job waits for its cron (no evaluation, no child); force
// launches one; a parameterized job dispatched with a payload and meta
// runs a task that reads both.
func TestE2E_PeriodicAndDispatchFromNomadClient(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-dispatch", ports, 0))
	c, err := nomad.NewClient(&nomad.Config{Address: a.addr})
	if err != nil {
		t.Fatal(err)
	}

	job := nomad.NewBatchJob("yearly", "yearly", "global", 50)
	job.Datacenters = []string{"dc1"}
	job.Periodic = &nomad.PeriodicConfig{Spec: new("0 0 1 1 *"), ProhibitOverlap: new(true), TimeZone: new("Europe/Paris")}
	job.AddTaskGroup(nomad.NewTaskGroup("g", 1).AddTask(nomad.NewTask("t", "raw_exec").SetConfig("command", "/bin/true")))
	job.Canonicalize()
	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatalf("register periodic: %v", err)
	}
	if resp.EvalID != "" {
		t.Fatalf("register periodic: eval %q, want none (it waits for its cron)", resp.EvalID)
	}
	if evals, _, err := c.Jobs().Evaluations("yearly", nil); err != nil || len(evals) != 0 {
		t.Fatalf("periodic parent evals %d (%v), want none", len(evals), err)
	}
	got, _, err := c.Jobs().Info("yearly", nil)
	if err != nil || got.Periodic == nil || got.Periodic.Spec == nil || *got.Periodic.Spec != "0 0 1 1 *" || *got.Status != "running" {
		t.Fatalf("periodic job read back: %+v, %v; want its periodic block kept and status running", got, err)
	}
	if kids := a.children("yearly"); len(kids) != 0 {
		t.Fatalf("children right after register: %v, want none", kids)
	}
	evalID, _, err := c.Jobs().PeriodicForce("yearly", nil)
	if err != nil || evalID == "" {
		t.Fatalf("periodic force: %q, %v", evalID, err)
	}
	waitFor(t, 30*time.Second, "the forced child to complete", func() bool {
		kids := a.children("yearly")
		return len(kids) == 1 && kids[0].Status == "dead"
	})

	if r := a.drover("job", "run", writeFile(t, dir, "render.hcl", render)); r.code != 0 {
		t.Fatalf("job run render: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if _, _, err := c.Jobs().Dispatch("render", map[string]string{"who": "x", "color": "red"}, []byte("p"), "", nil); err == nil ||
		!strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "color") {
		t.Errorf("dispatch with unknown meta: %v, want a 400 naming color", err)
	}
	if _, _, err := c.Jobs().Dispatch("render", map[string]string{"who": "x"}, nil, "", nil); err == nil || !strings.Contains(err.Error(), "payload is required") {
		t.Errorf("dispatch without payload: %v, want payload is required", err)
	}
	disp, _, err := c.Jobs().Dispatch("render", map[string]string{"who": "alice"}, []byte("hello-payload"), "", nil)
	if err != nil || !strings.HasPrefix(disp.DispatchedJobID, "render/dispatch-") || disp.EvalID == "" {
		t.Fatalf("dispatch: %+v, %v", disp, err)
	}
	var allocs []allocStub
	waitFor(t, 30*time.Second, "the dispatched child's allocation to finish", func() bool {
		allocs = nil
		a.getJSON("/v1/job/"+url.PathEscape(disp.DispatchedJobID)+"/allocations", &allocs)
		return len(allocs) == 1 && (allocs[0].ClientStatus == "complete" || allocs[0].ClientStatus == "failed")
	})
	logs := a.drover("alloc", "logs", allocs[0].ID)
	if want := "payload=hello-payload who=alice WHO=alice"; !strings.Contains(logs.stdout, want) {
		t.Errorf("dispatched task logs = %q (status %s), want %q", logs.stdout, allocs[0].ClientStatus, want)
	}

	// Bad requests are 4xx with one-line messages naming the problem.
	for _, tt := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"PUT", "/v1/job/nope/dispatch", "{}", 404, `job "nope" not found`},
		{"PUT", "/v1/job/yearly/dispatch", "{}", 400, "not a parameterized job"},
		{"PUT", "/v1/job/render/dispatch", `{"Payload": "!!"}`, 400, ""},
		{"PUT", "/v1/job/render/dispatch", `{"JobID": "other"}`, 400, "does not match"},
		{"PUT", "/v1/job/render/periodic/force", "", 400, "not a periodic job"},
		{"PUT", "/v1/job/nope/periodic/force", "", 404, "not found"},
	} {
		code, body := a.do(tt.method, tt.path, tt.body)
		if code != tt.code || !strings.Contains(body, tt.want) || strings.Count(strings.TrimSpace(body), "\n") > 0 {
			t.Errorf("%s %s %s: %d %q, want %d with %q on one line", tt.method, tt.path, tt.body, code, body, tt.code, tt.want)
		}
	}

	// The CLI: dispatch with meta and an input file, followed to the end.
	input := writeFile(t, dir, "input.txt", "from-cli")
	r := a.drover("job", "dispatch", "-meta", "who=bob", "-id-prefix-template", "cli", "render", input)
	if r.code != 0 || !strings.Contains(r.stdout, "Dispatched Job ID = render/dispatch-cli-") {
		t.Fatalf("job dispatch: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	st := a.drover("job", "status", "render")
	for _, want := range []string{"Parameterized Job", "Payload", "required", "Dispatched Jobs", "render/dispatch-cli-"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("job status render lacks %q:\n%s", want, st.stdout)
		}
	}
}
