package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// deployment is the part of /v1/job/<id>/deployment these tests read.
type deployment struct {
	ID, Status, StatusDescription string
	JobVersion                    uint64
	TaskGroups                    map[string]struct {
		Promoted                                                                    bool
		DesiredCanaries, DesiredTotal, PlacedAllocs, HealthyAllocs, UnhealthyAllocs int
	}
}

func (a *agentProc) latestDeployment(jobID string) *deployment {
	a.t.Helper()
	var d *deployment
	if code := a.getJSON("/v1/job/"+jobID+"/deployment", &d); code != 200 {
		a.t.Fatalf("GET deployment of %s: status %d", jobID, code)
	}
	return d
}

// liveVersions returns the job versions of the job's allocations meant
// to run and running, sorted.
func (a *agentProc) liveVersions(jobID string) []string {
	a.t.Helper()
	var stubs []struct {
		DesiredStatus, ClientStatus string
		JobVersion                  uint64
	}
	if code := a.getJSON("/v1/job/"+jobID+"/allocations", &stubs); code != 200 {
		a.t.Fatalf("GET allocations of %s: status %d", jobID, code)
	}
	var out []string
	for _, s := range stubs {
		if s.DesiredStatus == "run" && s.ClientStatus == "running" {
			out = append(out, fmt.Sprint(s.JobVersion))
		}
	}
	sortStrings(out)
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// waitDeployment waits until the job's latest deployment is of version
// and has status.
func (a *agentProc) waitDeployment(jobID string, version uint64, status string) *deployment {
	a.t.Helper()
	var d *deployment
	waitFor(a.t, 60*time.Second, fmt.Sprintf("deployment of %s version %d %s", jobID, version, status), func() bool {
		d = a.latestDeployment(jobID)
		return d != nil && d.JobVersion == version && d.Status == status
	})
	return d
}

const canaryUpdate = `
    update {
      max_parallel      = 1
      canary            = 1
      health_check      = "task_states"
      min_healthy_time  = "1s"
      healthy_deadline  = "30s"
      progress_deadline = "2m"
    }
`

// TestE2E_CanaryPromoteRevert is the canary deployment: a
// service job runs two allocations; an update with canary = 1 places
// one canary beside them; `deployment promote` completes the rollout;
// `job revert web 0` rolls back (its canary promoted too).
func TestE2E_CanaryPromoteRevert(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-d", ports, 0))
	v0 := strings.Replace(shJob("web", "service", "sleep 300", canaryUpdate), `group "g" {`, "group \"g\" {\n    count = 2", 1)
	v1 := strings.Replace(v0, "sleep 300", "sleep 301", 1)

	if r := a.drover("job", "run", writeFile(t, dir, "v0.hcl", v0)); r.code != 0 || !strings.Contains(r.stdout, "Deployment completed successfully") {
		t.Fatalf("job run v0: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	first := a.waitDeployment("web", 0, "successful")
	if first.TaskGroups["g"].HealthyAllocs != 2 {
		t.Errorf("v0 deployment healthy %d, want 2", first.TaskGroups["g"].HealthyAllocs)
	}

	r := a.drover("job", "run", writeFile(t, dir, "v1.hcl", v1))
	if r.code != 0 || !strings.Contains(r.stdout, "waits for promotion") || !strings.Contains(r.stdout, "Canaries") {
		t.Fatalf("job run v1: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	d := a.waitDeployment("web", 1, "running")
	if g := d.TaskGroups["g"]; g.DesiredCanaries != 1 || g.Promoted || g.HealthyAllocs != 1 {
		t.Fatalf("v1 deployment group = %+v, want one healthy canary, not promoted", g)
	}
	if got := strings.Join(a.liveVersions("web"), ","); got != "0,0,1" {
		t.Fatalf("before promotion: running versions %s, want 0,0,1 (the old ones kept)", got)
	}

	if r := a.drover("deployment", "promote", d.ID); r.code != 0 {
		t.Fatalf("deployment promote: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	a.waitDeployment("web", 1, "successful")
	waitFor(t, 60*time.Second, "all allocations on version 1", func() bool { return strings.Join(a.liveVersions("web"), ",") == "1,1" })
	if r := a.drover("deployment", "status", d.ID); r.code != 0 || !strings.Contains(r.stdout, "successful") {
		t.Errorf("deployment status: code %d\n%s", r.code, r.stdout)
	}
	if r := a.drover("job", "status", "web"); r.code != 0 || !strings.Contains(r.stdout, "Latest Deployment") || !strings.Contains(r.stdout, "Deployment completed successfully") {
		t.Errorf("job status: code %d\n%s", r.code, r.stdout)
	}
	if r := a.drover("job", "history", "-p", "web"); r.code != 0 || !strings.Contains(r.stdout, "Version     = 1") || !strings.Contains(r.stdout, "sleep 301") {
		t.Errorf("job history: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	if r := a.drover("job", "revert", "web", "0"); r.code != 0 {
		t.Fatalf("job revert: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	back := a.waitDeployment("web", 2, "running")
	waitFor(t, 60*time.Second, "the revert's canary healthy", func() bool {
		return a.latestDeployment("web").TaskGroups["g"].HealthyAllocs == 1
	})
	if r := a.drover("deployment", "promote", back.ID); r.code != 0 {
		t.Fatalf("promote the revert: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	a.waitDeployment("web", 2, "successful")
	waitFor(t, 60*time.Second, "all allocations on version 2", func() bool { return strings.Join(a.liveVersions("web"), ",") == "2,2" })
	r = a.drover("job", "inspect", "web")
	if r.code != 0 || !strings.Contains(r.stdout, "sleep 300") || !strings.Contains(r.stdout, `"Version": 2`) {
		t.Errorf("job inspect after revert: code %d\n%s", r.code, r.stdout)
	}
}

// TestE2E_AutoRevert: a new version whose task fails at once fails its
// deployment, and auto_revert registers the stable version again.
func TestE2E_AutoRevert(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-ar", ports, 0))
	blocks := `
    restart {
      attempts = 0
      mode     = "fail"
    }
    update {
      max_parallel      = 1
      auto_revert       = true
      health_check      = "task_states"
      min_healthy_time  = "1s"
      healthy_deadline  = "20s"
      progress_deadline = "1m"
    }
`
	v0 := shJob("svc", "service", "sleep 300", blocks)
	bad := shJob("svc", "service", "exit 1", blocks)
	if r := a.drover("job", "run", writeFile(t, dir, "v0.hcl", v0)); r.code != 0 {
		t.Fatalf("job run v0: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	a.waitDeployment("svc", 0, "successful")

	r := a.drover("job", "run", writeFile(t, dir, "bad.hcl", bad))
	if r.code == 0 {
		t.Errorf("job run of the failing version: code 0, want non-zero\n%s", r.stdout)
	}
	var failed *deployment
	waitFor(t, 60*time.Second, "version 1's deployment failed and rolled back", func() bool {
		var all []*deployment
		a.getJSON("/v1/job/svc/deployments", &all)
		for _, d := range all {
			if d.JobVersion == 1 && d.Status == "failed" {
				failed = d
				return true
			}
		}
		return false
	})
	if !strings.Contains(failed.StatusDescription, "rolling back to job version 0") {
		t.Errorf("failed deployment description %q, want the rollback named", failed.StatusDescription)
	}
	a.waitDeployment("svc", 2, "successful")
	waitFor(t, 60*time.Second, "running version 2", func() bool { return strings.Join(a.liveVersions("svc"), ",") == "2" })
	var job struct {
		Version uint64
		Stable  bool
	}
	a.getJSON("/v1/job/svc", &job)
	if job.Version != 2 || !job.Stable {
		t.Errorf("job version %d stable %v, want 2 and stable", job.Version, job.Stable)
	}
}
