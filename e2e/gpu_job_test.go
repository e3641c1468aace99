package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// gpuJob is a raw_exec batch job asking for count GPUs that prints the GPUs
// it was given and then runs script.
func gpuJob(id string, count int, script string) string {
	return fmt.Sprintf(`job %q {
  type        = "batch"
  datacenters = ["dc1"]

  group "train" {
    task "print" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo GPUS=$NVIDIA_VISIBLE_DEVICES; %s"]
      }
      resources {
        cpu    = 100
        memory = 64
        device "nvidia/gpu" {
          count = %d
        }
      }
    }
  }
}
`, id, script, count)
}

var gpusLine = regexp.MustCompile(`GPUS=(\S*)`)

type allocStub struct {
	ID                 string
	JobID              string
	NodeID             string
	ClientStatus       string
	DesiredStatus      string
	AllocatedResources struct {
		Tasks map[string]struct {
			Devices []struct{ DeviceIDs []string }
		}
	}
}

func (a allocStub) gpus() []string {
	var ids []string
	for _, t := range a.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			ids = append(ids, d.DeviceIDs...)
		}
	}
	sort.Strings(ids)
	return ids
}

// jobAllocs returns the job's allocations.
func (a *agentProc) jobAllocs(job string) []allocStub {
	var out []allocStub
	if code := a.getJSON("/v1/job/"+job+"/allocations", &out); code != 200 {
		a.t.Fatalf("GET job %s allocations: status %d", job, code)
	}
	return out
}

// waitAlloc waits until job has an allocation whose client status is one
// of statuses, and returns it.
func (a *agentProc) waitAlloc(job string, statuses ...string) allocStub {
	a.t.Helper()
	var found allocStub
	waitFor(a.t, 30*time.Second, fmt.Sprintf("job %s allocation %v", job, statuses), func() bool {
		for _, al := range a.jobAllocs(job) {
			if slices.Contains(statuses, al.ClientStatus) {
				found = al
				return true
			}
		}
		return false
	})
	return found
}

// nodeGPUs returns the GPU UUIDs /v1/node/<id> lists.
func (a *agentProc) nodeGPUs(nodeID string) []string {
	var node struct {
		NodeResources struct {
			Devices []struct {
				Type      string
				Instances []struct{ ID string }
			}
		}
	}
	if code := a.getJSON("/v1/node/"+nodeID, &node); code != 200 {
		a.t.Fatalf("GET node %s: status %d", nodeID, code)
	}
	var ids []string
	for _, d := range node.NodeResources.Devices {
		for _, inst := range d.Instances {
			ids = append(ids, inst.ID)
		}
	}
	return ids
}

func TestE2E_GPUJobs(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	cfg := agentConfig(t, dir, "node-a", ports, 4)
	a := startAgent(t, ports[0], "-config", cfg)

	// 2: a batch job asking for 2 GPUs prints two distinct UUIDs of the node.
	job := writeFile(t, dir, "gpu.hcl", gpuJob("gpu-print", 2, "true"))
	if r := a.drover("job", "run", job); r.code != 0 {
		t.Fatalf("job run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	done := a.waitAlloc("gpu-print", "complete", "failed")
	if done.ClientStatus != "complete" {
		t.Fatalf("gpu-print allocation: got status %s, want complete", done.ClientStatus)
	}
	r := a.drover("alloc", "logs", done.ID)
	if r.code != 0 {
		t.Fatalf("alloc logs: exit %d: %s", r.code, r.stderr)
	}
	m := gpusLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("alloc logs: got %q, want a GPUS= line", r.stdout)
	}
	printed := strings.Split(m[1], ",")
	if len(printed) != 2 || printed[0] == printed[1] {
		t.Fatalf("printed GPUs: got %q, want two distinct UUIDs", m[1])
	}
	nodeGPUs := a.nodeGPUs(done.NodeID)
	for _, id := range printed {
		if !slices.Contains(nodeGPUs, id) {
			t.Errorf("printed GPU %s is not one of the node's GPUs %v", id, nodeGPUs)
		}
	}
	if got := done.gpus(); !slices.Equal(got, sortedCopy(printed)) {
		t.Errorf("allocation holds %v, task saw %v", got, printed)
	}

	// 3: two holders get disjoint GPUs; a third waits for GPUs and runs
	// when the first holder ends.
	release := filepath.Join(dir, "release-1")
	hold := fmt.Sprintf("while [ ! -f %s ]; do sleep 0.1; done", release)
	for _, j := range []struct{ id, script string }{
		{"hold-1", hold},
		{"hold-2", "sleep 600"},
	} {
		path := writeFile(t, dir, j.id+".hcl", gpuJob(j.id, 2, j.script))
		if r := a.drover("job", "run", path); r.code != 0 {
			t.Fatalf("job run %s: exit %d\n%s%s", j.id, r.code, r.stdout, r.stderr)
		}
	}
	h1 := a.waitAlloc("hold-1", "running")
	h2 := a.waitAlloc("hold-2", "running")
	if slices.ContainsFunc(h1.gpus(), func(id string) bool { return slices.Contains(h2.gpus(), id) }) {
		t.Fatalf("holders share GPUs: hold-1 %v, hold-2 %v", h1.gpus(), h2.gpus())
	}
	waiter := writeFile(t, dir, "waiter.hcl", gpuJob("waiter", 2, "true"))
	r = a.drover("job", "run", "-detach", waiter)
	if r.code != 0 {
		t.Fatalf("job run -detach waiter: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 20*time.Second, "waiter's status to say it waits for GPUs", func() bool {
		st := a.drover("job", "status", "waiter")
		return st.code == 0 && strings.Contains(strings.ToLower(st.stdout), "gpu")
	})
	if allocs := a.jobAllocs("waiter"); len(allocs) != 0 {
		t.Fatalf("waiter placed while all GPUs are held: %+v", allocs)
	}
	writeFile(t, dir, "release-1", "")
	w := a.waitAlloc("waiter", "running", "complete")
	if !slices.Equal(w.gpus(), h1.gpus()) {
		t.Errorf("waiter got GPUs %v, want hold-1's freed GPUs %v", w.gpus(), h1.gpus())
	}

	// 4: requests that can never fit are not placed and say why.
	five := writeFile(t, dir, "five.hcl", gpuJob("five", 5, "true"))
	r = a.drover("job", "run", five)
	if r.code == 0 {
		t.Errorf("job run five: exit 0, want non-zero for an unplaceable job")
	}
	if out := strings.ToLower(r.stdout + r.stderr); !strings.Contains(out, "gpu") {
		t.Errorf("job run five: output does not name the GPUs:\n%s", r.stdout+r.stderr)
	}
	big := strings.Replace(gpuJob("big-mem", 1, "true"), "count = 1", `count = 1
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "100 GiB"
          }`, 1)
	r = a.drover("job", "run", writeFile(t, dir, "big.hcl", big))
	if r.code == 0 {
		t.Errorf("job run big-mem: exit 0, want non-zero")
	}
	if !strings.Contains(r.stdout+r.stderr, "${device.attr.memory}") {
		t.Errorf("job run big-mem: output does not name the constraint:\n%s", r.stdout+r.stderr)
	}
	for _, j := range []string{"five", "big-mem"} {
		if allocs := a.jobAllocs(j); len(allocs) != 0 {
			t.Errorf("job %s placed: %+v", j, allocs)
		}
	}

	// 5: a restart on the same data_dir keeps jobs, evaluations and
	// allocations. Stop the long-running holder first so that nothing is
	// mid-flight across the restart.
	if r := a.drover("job", "stop", "-detach", "hold-2"); r.code != 0 {
		t.Fatalf("job stop hold-2: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 30*time.Second, "hold-2 to stop", func() bool {
		for _, al := range a.jobAllocs("hold-2") {
			if al.ClientStatus == "running" || al.ClientStatus == "pending" {
				return false
			}
		}
		return true
	})
	before := snapshotIDs(a)
	a.stop()
	a = startAgent(t, ports[0], "-config", cfg)
	after := snapshotIDs(a)
	for kind, ids := range before {
		if !slices.Equal(after[kind], ids) {
			t.Errorf("after restart %s: got %v, want %v", kind, after[kind], ids)
		}
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// snapshotIDs lists the IDs of jobs, evaluations and allocations.
func snapshotIDs(a *agentProc) map[string][]string {
	out := map[string][]string{}
	for kind, path := range map[string]string{"jobs": "/v1/jobs", "evals": "/v1/evaluations", "allocs": "/v1/allocations"} {
		var objs []struct{ ID string }
		if code := a.getJSON(path, &objs); code != 200 {
			a.t.Fatalf("GET %s: status %d", path, code)
		}
		for _, o := range objs {
			out[kind] = append(out[kind], o.ID)
		}
		sort.Strings(out[kind])
		if len(out[kind]) == 0 {
			a.t.Fatalf("GET %s: empty before restart check", path)
		}
	}
	return out
}

// TestE2E_JobPlan: `drover job plan` shows the GPUs a placement would use
// and, for a job that cannot be placed, how many nodes failed per reason;
// nothing is registered.
func TestE2E_JobPlan(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-plan", ports, 4))

	r := a.drover("job", "plan", writeFile(t, dir, "fits.hcl", gpuJob("fits", 2, "true")))
	if r.code != 0 {
		t.Fatalf("plan fits: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`Job: "fits" (added)`, "(1 place, 0 stop)", "fits.train[0] on node", ", GPUs GPU-", "All tasks successfully allocated"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan fits: output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = a.drover("job", "plan", writeFile(t, dir, "five.hcl", gpuJob("five", 5, "true")))
	if r.code != 2 {
		t.Errorf("plan five: exit %d, want 2", r.code)
	}
	if !strings.Contains(r.stdout, "Resources exhausted on 1 node: devices: nvidia/gpu: node has 4 matching, need 5") {
		t.Errorf("plan five: output lacks the per-reason node count:\n%s", r.stdout)
	}
	for _, j := range []string{"fits", "five"} {
		if code := a.getJSON("/v1/job/"+j, nil); code != 404 {
			t.Errorf("after plan, GET job %s: status %d, want 404", j, code)
		}
	}
}
