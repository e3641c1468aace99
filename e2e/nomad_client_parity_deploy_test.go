package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// The parity calls on job versions, deployments, the nomad service
// registry and scaling policies, all on the "web" job: a service with a
// canary update, a nomad-provider service on a dynamic port and a
// scaling policy.

// webJob is the "web" service job whose task sleeps for secs.
func webJob(secs string) *nomad.Job {
	job := nomad.NewServiceJob("web", "web", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := nomad.NewTask("srv", "raw_exec").
		SetConfig("command", "/bin/sleep").
		SetConfig("args", []string{secs}).
		Require(&nomad.Resources{CPU: intp(50), MemoryMB: intp(32)})
	tg := nomad.NewTaskGroup("w", 1).AddTask(task)
	tg.Networks = []*nomad.NetworkResource{{DynamicPorts: []nomad.Port{{Label: "http"}}}}
	tg.Services = []*nomad.Service{{Name: "web-svc", PortLabel: "http", Provider: "nomad"}}
	tg.Update = &nomad.UpdateStrategy{
		MaxParallel: intp(1), Canary: intp(1), HealthCheck: new("task_states"),
		MinHealthyTime: new(500 * time.Millisecond), HealthyDeadline: new(20 * time.Second), ProgressDeadline: new(time.Minute),
	}
	tg.Scaling = &nomad.ScalingPolicy{Min: new(int64(1)), Max: new(int64(3)), Enabled: new(true), Policy: map[string]any{"cooldown": "1m"}}
	job.AddTaskGroup(tg)
	job.Canonicalize()
	return job
}

// waitDeploymentStatus polls the deployment until it has status.
func (p *parity) waitDeploymentStatus(t *testing.T, id, status string) *nomad.Deployment {
	t.Helper()
	var d *nomad.Deployment
	waitFor(t, 30*time.Second, "deployment "+id+" "+status, func() bool {
		var err error
		d, _, err = p.c.Deployments().Info(id, nil)
		return err == nil && d.Status == status
	})
	return d
}

func callWebRegister(t *testing.T, p *parity) {
	resp, _, err := p.c.Jobs().Register(webJob("300"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" {
		t.Fatalf("got %+v, want an eval", resp)
	}
	waitFor(t, 30*time.Second, "web's first deployment", func() bool {
		d, _, err := p.c.Jobs().LatestDeployment("web", nil)
		return err == nil && d != nil && d.Status == "successful"
	})
}

func callJobsLatestDeployment(t *testing.T, p *parity) {
	d, _, err := p.c.Jobs().LatestDeployment("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d == nil || d.JobID != "web" || d.JobVersion != 0 || d.Status != "successful" || d.TaskGroups["w"] == nil || d.TaskGroups["w"].HealthyAllocs != 1 {
		t.Errorf("got %+v, want web's version 0 deployment successful with 1 healthy", d)
	}
	p.deployments = append(p.deployments, d.ID)
}

func callServicesList(t *testing.T, p *parity) {
	waitFor(t, 30*time.Second, "web-svc registered", func() bool {
		list, _, err := p.c.Services().List(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range list {
			if ns.Namespace == "default" && slices.ContainsFunc(ns.Services, func(s *nomad.ServiceRegistrationStub) bool { return s.ServiceName == "web-svc" }) {
				return true
			}
		}
		return false
	})
}

func callServicesGet(t *testing.T, p *parity) {
	regs, _, err := p.c.Services().Get("web-svc", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != 1 || regs[0].JobID != "web" || regs[0].Port == 0 || regs[0].Address == "" || regs[0].AllocID == "" {
		t.Fatalf("got %+v, want web's one registration with an address and port", regs)
	}
	p.serviceID = regs[0].ID
}

func callScalingListPolicies(t *testing.T, p *parity) {
	stubs, _, err := p.c.Scaling().ListPolicies(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stubs {
		if s.Target["Job"] == "web" && s.Target["Group"] == "w" && s.Enabled {
			p.policyID = s.ID
		}
	}
	if p.policyID == "" {
		t.Errorf("got %+v, want web's group w policy", stubs)
	}
}

func callScalingGetPolicy(t *testing.T, p *parity) {
	if p.policyID == "" {
		t.Fatal("no policy: Scaling.ListPolicies failed")
	}
	pol, _, err := p.c.Scaling().GetPolicy(p.policyID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pol.Min == nil || *pol.Min != 1 || pol.Max == nil || *pol.Max != 3 || pol.Policy["cooldown"] != "1m" || pol.Target["Namespace"] != "default" {
		t.Errorf("got %+v, want min 1, max 3, cooldown 1m", pol)
	}
}

func callWebRegisterCanary(t *testing.T, p *parity) {
	if _, _, err := p.c.Jobs().Register(webJob("301"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "web's version 1 deployment", func() bool {
		d, _, err := p.c.Jobs().LatestDeployment("web", nil)
		return err == nil && d != nil && d.JobVersion == 1
	})
}

func callJobsVersions(t *testing.T, p *parity) {
	versions, diffs, _, err := p.c.Jobs().Versions("web", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 2 || *versions[0].Version != 1 || *versions[1].Version != 0 ||
		sleepArg(versions[0]) != "301" || sleepArg(versions[1]) != "300" {
		t.Fatalf("got %d versions, want 1 (sleep 301) then 0 (sleep 300)", len(versions))
	}
	if len(diffs) != 1 || diffs[0].Type != "Edited" {
		t.Errorf("diffs: got %+v, want one Edited", diffs)
	}
}

// sleepArg is the web task's sleep argument.
func sleepArg(j *nomad.Job) string {
	args, _ := j.TaskGroups[0].Tasks[0].Config["args"].([]any)
	if len(args) != 1 {
		return ""
	}
	s, _ := args[0].(string)
	return s
}

func callDeploymentsList(t *testing.T, p *parity) {
	list, _, err := p.c.Deployments().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	var webs []uint64
	for _, d := range list {
		if d.JobID == "web" {
			webs = append(webs, d.JobVersion)
			if d.JobVersion == 1 {
				p.deployments = append(p.deployments, d.ID)
			}
		}
	}
	slices.Sort(webs)
	if !slices.Equal(webs, []uint64{0, 1}) {
		t.Errorf("web's deployments: got versions %v, want [0 1]", webs)
	}
}

// canary is the deployment of web's version 1.
func (p *parity) canary(t *testing.T) string {
	if len(p.deployments) < 2 {
		t.Fatal("no canary deployment: Deployments.List failed")
	}
	return p.deployments[1]
}

func callDeploymentsInfo(t *testing.T, p *parity) {
	id := p.canary(t)
	var d *nomad.Deployment
	waitFor(t, 30*time.Second, "the canary healthy", func() bool {
		var err error
		d, _, err = p.c.Deployments().Info(id, nil)
		return err == nil && d.TaskGroups["w"] != nil && d.TaskGroups["w"].HealthyAllocs == 1
	})
	g := d.TaskGroups["w"]
	if d.Status != "running" || g.DesiredCanaries != 1 || g.Promoted || len(g.PlacedCanaries) != 1 {
		t.Errorf("got %+v, group %+v; want a running deployment waiting to promote one canary", d, g)
	}
}

func callDeploymentsAllocations(t *testing.T, p *parity) {
	allocs, _, err := p.c.Deployments().Allocations(p.canary(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(allocs) != 1 || allocs[0].JobVersion != 1 || allocs[0].DeploymentStatus == nil || !allocs[0].DeploymentStatus.Canary {
		t.Errorf("got %+v, want the one canary of version 1", allocs)
	}
}

func callDeploymentsPromoteAll(t *testing.T, p *parity) {
	id := p.canary(t)
	resp, _, err := p.c.Deployments().PromoteAll(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" {
		t.Errorf("got %+v, want an eval", resp)
	}
	d := p.waitDeploymentStatus(t, id, "successful")
	if !d.TaskGroups["w"].Promoted {
		t.Errorf("group %+v, want promoted", d.TaskGroups["w"])
	}
}

func callJobsDeployments(t *testing.T, p *parity) {
	list, _, err := p.c.Jobs().Deployments("web", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].JobVersion != 1 || list[0].Status != "successful" {
		t.Errorf("got %+v, want web's two deployments, version 1 first", list)
	}
}

func callJobsStable(t *testing.T, p *parity) {
	if _, _, err := p.c.Jobs().Stable("web", 1, false, nil); err != nil {
		t.Fatal(err)
	}
	versions, _, _, err := p.c.Jobs().Versions("web", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 2 || *versions[0].Stable || !*versions[1].Stable {
		t.Errorf("got stable %v, %v; want version 1 unstable, 0 stable", *versions[0].Stable, *versions[1].Stable)
	}
}

func callJobsRevert(t *testing.T, p *parity) {
	if _, _, err := p.c.Jobs().Revert("web", 0, new(uint64(0)), nil, "", ""); err == nil {
		t.Error("revert enforcing prior version 0: no error, want one (web is at 1)")
	}
	resp, _, err := p.c.Jobs().Revert("web", 0, new(uint64(1)), nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" {
		t.Errorf("got %+v, want an eval", resp)
	}
	job, _, err := p.c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *job.Version != 2 || sleepArg(job) != "300" {
		t.Errorf("got version %d sleeping %s, want version 2 with version 0's sleep 300", *job.Version, sleepArg(job))
	}
}

// revertDeployment is the deployment of the revert (version 2).
func (p *parity) revertDeployment(t *testing.T) string {
	var id string
	waitFor(t, 30*time.Second, "the revert's deployment", func() bool {
		d, _, err := p.c.Jobs().LatestDeployment("web", nil)
		if err == nil && d != nil && d.JobVersion == 2 {
			id = d.ID
		}
		return id != ""
	})
	return id
}

func callDeploymentsPause(t *testing.T, p *parity) {
	id := p.revertDeployment(t)
	if _, _, err := p.c.Deployments().Pause(id, true, nil); err != nil {
		t.Fatal(err)
	}
	p.waitDeploymentStatus(t, id, "paused")
	if _, _, err := p.c.Deployments().Pause(id, false, nil); err != nil {
		t.Fatal(err)
	}
	p.waitDeploymentStatus(t, id, "running")
}

func callDeploymentsFail(t *testing.T, p *parity) {
	id := p.revertDeployment(t)
	if _, _, err := p.c.Deployments().Fail(id, nil); err != nil {
		t.Fatal(err)
	}
	d := p.waitDeploymentStatus(t, id, "failed")
	if !strings.Contains(d.StatusDescription, "fail") {
		t.Errorf("status description %q, want it to say the deployment was failed", d.StatusDescription)
	}
}

func callServicesDelete(t *testing.T, p *parity) {
	// The registration Services.Get saw went with its allocation when
	// the promoted canary replaced it: delete a live one.
	var regs []*nomad.ServiceRegistration
	waitFor(t, 30*time.Second, "a live web-svc registration", func() bool {
		var err error
		regs, _, err = p.c.Services().Get("web-svc", nil)
		return err == nil && len(regs) > 0
	})
	id := regs[0].ID
	if id == p.serviceID {
		t.Errorf("registration %s of the replaced allocation is still listed", id)
	}
	if _, err := p.c.Services().Delete("web-svc", id, nil); err != nil {
		t.Fatal(err)
	}
	regs, _, err := p.c.Services().Get("web-svc", nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(regs, func(r *nomad.ServiceRegistration) bool { return r.ID == id }) {
		t.Errorf("after delete: %+v still holds %s", regs, id)
	}
	if _, err := p.c.Services().Delete("web-svc", id, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("delete again: %v, want a 404", err)
	}
}

func callJobsServices(t *testing.T, p *parity) {
	regs, _, err := p.c.Jobs().Services("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) == 0 || !slices.ContainsFunc(regs, func(r *nomad.ServiceRegistration) bool { return r.ServiceName == "web-svc" && r.JobID == "web" }) {
		t.Errorf("got %+v, want web's web-svc registrations", regs)
	}
	if _, _, err := p.c.Jobs().Services("nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown job: %v, want a 404", err)
	}
}

func callAllocationsServices(t *testing.T, p *parity) {
	byJob, _, err := p.c.Jobs().Services("web", nil)
	if err != nil || len(byJob) == 0 {
		t.Fatalf("job's services: %v %v", byJob, err)
	}
	regs, _, err := p.c.Allocations().Services(byJob[0].AllocID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != 1 || regs[0].ID != byJob[0].ID || regs[0].Port == 0 {
		t.Errorf("got %+v, want the allocation's one registration %s", regs, byJob[0].ID)
	}
}

func callJobsPlanCanary(t *testing.T, p *parity) {
	resp, _, err := p.c.Jobs().Plan(webJob("302"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := resp.Annotations.DesiredTGUpdates["w"]
	if u == nil || u.Canary != 1 || u.DestructiveUpdate != 0 {
		t.Errorf("annotations: got %+v, want one canary and nothing replaced yet", u)
	}
	// Drover's diff is flat: one job-level field per change, named by its
	// path (Nomad nests group and task diffs).
	if resp.Diff == nil || resp.Diff.Type != "Edited" || len(resp.Diff.Fields) != 1 || resp.Diff.Fields[0].Name != `TaskGroups["w"].Tasks["srv"].Config.args` {
		t.Errorf("diff: got %+v, want the sleep argument edited", resp.Diff)
	}
	if job, _, err := p.c.Jobs().Info("web", nil); err != nil || *job.Version != 2 {
		t.Errorf("plan changed the job: %v", err)
	}
}
