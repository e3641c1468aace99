package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

// parity is the state the calls of TestE2E_NomadClientParity share: the
// client, and what earlier calls learnt.
type parity struct {
	a      *agentProc
	c      *nomad.Client
	job    *nomad.Job
	nodeID string
	allocs []*nomad.AllocationListStub
	evalID string
	// deployments are web's: version 0's, then version 1's (the canary).
	deployments []string
	serviceID   string
	policyID    string
}

// TestE2E_NomadClientParity drives a dev agent with the official Nomad
// Go client, one named call at a time, each checking what it got back.
// Calls run in order and may use what earlier ones learnt; a failing
// call does not stop the rest. Append calls as Drover grows.
func TestE2E_NomadClientParity(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-parity", ports, 2))
	c, err := nomad.NewClient(&nomad.Config{Address: a.addr})
	if err != nil {
		t.Fatal(err)
	}
	p := &parity{a: a, c: c, job: parityJob("parity", 1)}

	calls := []struct {
		name string
		fn   func(t *testing.T, p *parity)
	}{
		{"Jobs.Register", callJobsRegister},
		{"Jobs.Info", callJobsInfo},
		{"Jobs.List", callJobsList},
		{"Jobs.PrefixList", callJobsPrefixList},
		{"Jobs.Allocations", callJobsAllocations},
		{"Jobs.Summary", callJobsSummary},
		{"Jobs.Evaluations", callJobsEvaluations},
		{"Jobs.Plan", callJobsPlan},
		{"Jobs.Scale", callJobsScale},
		{"Jobs.ScaleStatus", callJobsScaleStatus}, // nomad_client_parity_more_test.go
		{"Jobs.Validate", callJobsValidate},
		{"Jobs.EnforceRegister", callJobsEnforceRegister},
		{"Jobs.Register refuses an unsupported field", callJobsRegisterUnsupported},
		{"Jobs.Register refuses an unknown field", callJobsRegisterUnknown},
		{"Allocations.List", callAllocationsList},
		{"Allocations.Info", callAllocationsInfo},
		{"Nodes.List", callNodesList},
		{"Nodes.Info", callNodesInfo},
		{"Nodes.Allocations", callNodesAllocations},
		{"Evaluations.List", callEvaluationsList},
		{"Evaluations.Info", callEvaluationsInfo},
		{"Evaluations.Allocations", callEvaluationsAllocations},
		{"Nodes, Allocations and Evaluations.PrefixList", callPrefixLists},
		{"Agent.Self", callAgentSelf},
		{"Agent.Members", callAgentMembers},
		{"Agent.Servers", callAgentServers},
		{"Agent.Health", callAgentHealth},
		{"Status.Leader", callStatusLeader},
		{"Status.Peers", callStatusPeers},
		{"Regions.List", callRegionsList},
		{"Namespaces.Register", callNamespacesRegister},
		{"Namespaces.Info", callNamespacesInfo},
		{"Namespaces.List", callNamespacesList},
		{"Namespaces.Delete", callNamespacesDelete},
		{"Quotas.Register", callQuotasRegister},
		{"Quotas.Info", callQuotasInfo},
		{"Quotas.List", callQuotasList},
		{"Operator.RaftGetConfiguration", callOperatorRaft},
		{"Operator.SchedulerGetConfiguration", callOperatorScheduler},
		{"Search.PrefixSearch", callSearchPrefix},
		{"Search.FuzzySearch", callSearchFuzzy},
		{"EventStream.Stream", callEventStream},
		{"Jobs.ParseHCL", callJobsParseHCL},
		{"Allocations.Stats (decodes; per-task usage not reported yet)", callAllocationsStats},
		{"Nodes.Stats", callNodesStats},
		{"AllocFS.List", callAllocFSList},
		{"Allocations.Signal", callAllocationsSignal},
		{"Allocations.Restart", callAllocationsRestart},
		{"Operator.SchedulerSetConfiguration", callOperatorSchedulerSet},
		{"System.GarbageCollect", callSystemGC},
		{"Jobs.Register a service with a canary update", callWebRegister}, // nomad_client_parity_deploy_test.go
		{"Jobs.LatestDeployment", callJobsLatestDeployment},
		{"Services.List", callServicesList},
		{"Services.Get", callServicesGet},
		{"Scaling.ListPolicies", callScalingListPolicies},
		{"Scaling.GetPolicy", callScalingGetPolicy},
		{"Jobs.Register a new version (one canary)", callWebRegisterCanary},
		{"Jobs.Versions", callJobsVersions},
		{"Deployments.List", callDeploymentsList},
		{"Deployments.Info", callDeploymentsInfo},
		{"Deployments.Allocations", callDeploymentsAllocations},
		{"Deployments.PromoteAll", callDeploymentsPromoteAll},
		{"Jobs.Deployments", callJobsDeployments},
		{"Jobs.Stable", callJobsStable},
		{"Jobs.Revert", callJobsRevert},
		{"Deployments.Pause", callDeploymentsPause},
		{"Deployments.Fail", callDeploymentsFail},
		{"Jobs.Plan (a canary update)", callJobsPlanCanary},
		{"Jobs.Services", callJobsServices},
		{"Allocations.Services", callAllocationsServices},
		{"Services.Delete", callServicesDelete},
		{"Jobs.PeriodicForce", callJobsPeriodicForce}, // nomad_client_parity_more_test.go
		{"Jobs.Dispatch", callJobsDispatch},
		{"Variables.Create", callVariablesCreate},
		{"Variables.Read", callVariablesRead},
		{"Variables.Peek", callVariablesPeek},
		{"Variables.List and PrefixList", callVariablesList},
		{"Variables.CheckedUpdate (a stale index is a CAS conflict)", callVariablesCheckedUpdate},
		{"Variables.Update", callVariablesUpdate},
		{"Variables.Delete", callVariablesDelete},
		{"Variables.CheckedCreate and CheckedDelete", callVariablesCheckedCreateAndDelete},
		{"Nodes.ToggleEligibility", callNodesToggleEligibility},
		{"Keyring.List", callKeyringList},
		{"Keyring.Rotate", callKeyringRotate},
		{"Allocations.Stop", callAllocationsStop},
		{"Jobs.Deregister", callJobsDeregister},
	}
	passed := 0
	for _, call := range calls {
		if t.Run(call.name, func(t *testing.T) { call.fn(t, p) }) {
			passed++
		}
	}
	t.Logf("Nomad client parity: %d of %d calls pass", passed, len(calls))
}

// parityJob is a service job of count sleeping raw_exec tasks with one
// GPU each, as a Nomad user builds it.
func parityJob(id string, count int) *nomad.Job {
	job := nomad.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := nomad.NewTask("sleeper", "raw_exec").
		SetConfig("command", "/bin/sleep").
		SetConfig("args", []string{"600"}).
		Require(&nomad.Resources{CPU: intp(100), MemoryMB: intp(64), Devices: []*nomad.RequestedDevice{{Name: "nvidia/gpu", Count: uint64p(1)}}})
	job.AddTaskGroup(nomad.NewTaskGroup("g", count).AddTask(task))
	job.Canonicalize()
	return job
}

func callJobsRegister(t *testing.T, p *parity) {
	resp, _, err := p.c.Jobs().Register(p.job, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" || resp.JobModifyIndex == 0 {
		t.Fatalf("got %+v, want an eval ID and an index", resp)
	}
	p.evalID = resp.EvalID
}

func callJobsInfo(t *testing.T, p *parity) {
	job, _, err := p.c.Jobs().Info("parity", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *job.ID != "parity" || *job.Type != "service" || len(job.TaskGroups) != 1 || *job.TaskGroups[0].Name != "g" ||
		job.TaskGroups[0].Tasks[0].Driver != "raw_exec" || *job.TaskGroups[0].Tasks[0].Resources.Devices[0].Count != 1 {
		t.Errorf("got %+v, want the registered job", job)
	}
}

func callJobsList(t *testing.T, p *parity) {
	stubs, _, err := p.c.Jobs().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stubs) != 1 || stubs[0].ID != "parity" || stubs[0].Type != "service" {
		t.Errorf("got %+v, want the one service job", stubs)
	}
}

func callJobsPrefixList(t *testing.T, p *parity) {
	stubs, _, err := p.c.Jobs().PrefixList("par")
	if err != nil {
		t.Fatal(err)
	}
	none, _, err := p.c.Jobs().PrefixList("zzz")
	if err != nil {
		t.Fatal(err)
	}
	if len(stubs) != 1 || stubs[0].ID != "parity" || len(none) != 0 {
		t.Errorf("got %+v and %+v, want parity and nothing", stubs, none)
	}
}

func callJobsAllocations(t *testing.T, p *parity) {
	waitFor(t, 30*time.Second, "the job's allocation to run", func() bool {
		allocs, _, err := p.c.Jobs().Allocations("parity", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.allocs = allocs
		return len(allocs) == 1 && allocs[0].ClientStatus == "running"
	})
	if ts := p.allocs[0].TaskStates["sleeper"]; ts == nil || ts.State != "running" {
		t.Errorf("task state: got %+v, want running", ts)
	}
}

func callJobsSummary(t *testing.T, p *parity) {
	sum, _, err := p.c.Jobs().Summary("parity", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.JobID != "parity" || sum.Summary["g"].Running != 1 {
		t.Errorf("got %+v, want g with 1 running", sum)
	}
}

func callJobsEvaluations(t *testing.T, p *parity) {
	evals, _, err := p.c.Jobs().Evaluations("parity", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evals, func(e *nomad.Evaluation) bool { return e.ID == p.evalID && e.JobID == "parity" }) {
		t.Errorf("got %+v, want the register's eval %s", evals, p.evalID)
	}
}

func callJobsPlan(t *testing.T, p *parity) {
	bigger := parityJob("parity", 2)
	resp, _, err := p.c.Jobs().Plan(bigger, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Annotations == nil || resp.Annotations.DesiredTGUpdates["g"] == nil || resp.Annotations.DesiredTGUpdates["g"].Place != 1 {
		t.Errorf("annotations: got %+v, want 1 placement in g", resp.Annotations)
	}
	if resp.Diff == nil || resp.Diff.Type != "Edited" {
		t.Errorf("diff: got %+v, want Edited", resp.Diff)
	}
}

func callJobsScale(t *testing.T, p *parity) {
	resp, _, err := p.c.Jobs().Scale("parity", "g", intp(2), "more", false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" {
		t.Errorf("got %+v, want an eval", resp)
	}
	job, _, err := p.c.Jobs().Info("parity", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *job.TaskGroups[0].Count != 2 {
		t.Errorf("count: got %d, want 2", *job.TaskGroups[0].Count)
	}
}

func callJobsRegisterUnsupported(t *testing.T, p *parity) {
	job := parityJob("multiregion", 1)
	job.Multiregion = &nomad.Multiregion{Regions: []*nomad.MultiregionRegion{{Name: "west"}}}
	_, _, err := p.c.Jobs().Register(job, nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), `"Multiregion"`) || !strings.Contains(err.Error(), "not supported by Drover") {
		t.Errorf("got %v, want a 400 naming Multiregion as not supported by Drover", err)
	}
}

func callJobsRegisterUnknown(t *testing.T, p *parity) {
	b, err := json.Marshal(&nomad.JobRegisterRequest{Job: parityJob("typo", 1)})
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(b), `"Priority":`, `"Priorty":1,"Priority":`, 1)
	code, got := p.a.do(http.MethodPut, "/v1/jobs", body)
	if code != http.StatusBadRequest || !strings.Contains(got, `"Priorty"`) {
		t.Errorf("got %d %q, want a 400 naming Priorty", code, got)
	}
}

func callAllocationsList(t *testing.T, p *parity) {
	p.needAlloc(t)
	allocs, _, err := p.c.Allocations().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(allocs, func(a *nomad.AllocationListStub) bool { return a.ID == p.allocs[0].ID && a.JobID == "parity" }) {
		t.Errorf("got %+v, want %s", allocs, p.allocs[0].ID)
	}
}

func callAllocationsInfo(t *testing.T, p *parity) {
	p.needAlloc(t)
	alloc, _, err := p.c.Allocations().Info(p.allocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if alloc.JobID != "parity" || alloc.TaskGroup != "g" || alloc.Job == nil || *alloc.Job.ID != "parity" {
		t.Errorf("got %+v, want parity's allocation with its job", alloc)
	}
	res := alloc.AllocatedResources.Tasks["sleeper"]
	if res == nil || len(res.Devices) != 1 || len(res.Devices[0].DeviceIDs) != 1 {
		t.Errorf("allocated resources: got %+v, want one GPU", res)
	}
	p.nodeID = alloc.NodeID
}

func callNodesList(t *testing.T, p *parity) {
	nodes, _, err := p.c.Nodes().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].Name != "node-parity" || nodes[0].Status != "ready" {
		t.Errorf("got %+v, want node-parity ready", nodes)
	}
}

func callNodesInfo(t *testing.T, p *parity) {
	nodes, _, err := p.c.Nodes().List(nil)
	if err != nil || len(nodes) == 0 {
		t.Fatalf("list: %v", err)
	}
	node, _, err := p.c.Nodes().Info(nodes[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if node.Name != "node-parity" || node.NodeResources == nil || len(node.NodeResources.Devices) != 1 {
		t.Fatalf("got %+v, want node-parity with one device group", node)
	}
	dev := node.NodeResources.Devices[0]
	mem := dev.Attributes["memory"]
	if dev.Type != "gpu" || len(dev.Instances) != 2 || mem == nil || mem.IntVal == nil || *mem.IntVal != 80*1024 || mem.Unit != "MiB" {
		t.Errorf("device group: got %+v, memory %+v; want 2 GPUs with memory 81920 MiB", dev, mem)
	}
	if cc := dev.Attributes["compute_capability"]; cc == nil || cc.StringVal == nil || *cc.StringVal != "9.0" {
		t.Errorf("compute_capability: got %+v, want the string 9.0", cc)
	}
}

func callNodesAllocations(t *testing.T, p *parity) {
	p.needAlloc(t)
	allocs, _, err := p.c.Nodes().Allocations(p.nodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(allocs, func(a *nomad.Allocation) bool { return a.ID == p.allocs[0].ID }) {
		t.Errorf("got %d allocations, want %s among them", len(allocs), p.allocs[0].ID)
	}
}

func callEvaluationsList(t *testing.T, p *parity) {
	evals, _, err := p.c.Evaluations().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evals, func(e *nomad.Evaluation) bool { return e.ID == p.evalID }) {
		t.Errorf("got %d evals, want %s among them", len(evals), p.evalID)
	}
}

func callEvaluationsInfo(t *testing.T, p *parity) {
	ev, _, err := p.c.Evaluations().Info(p.evalID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ev.JobID != "parity" || ev.Status != "complete" || ev.TriggeredBy != "job-register" {
		t.Errorf("got %+v, want parity's complete job-register eval", ev)
	}
}

func callEvaluationsAllocations(t *testing.T, p *parity) {
	p.needAlloc(t)
	// The scale updated the allocation in place: its eval is now the
	// scale's.
	alloc, _, err := p.c.Allocations().Info(p.allocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	allocs, _, err := p.c.Evaluations().Allocations(alloc.EvalID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(allocs, func(a *nomad.AllocationListStub) bool { return a.ID == alloc.ID && a.EvalID == alloc.EvalID }) {
		t.Errorf("got %+v, want %s", allocs, alloc.ID)
	}
}

func callAgentSelf(t *testing.T, p *parity) {
	self, err := p.c.Agent().Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.Member.Name != "node-parity" || self.Stats["agent"]["server"] != "true" || self.Stats["nomad"]["leader"] != "true" ||
		self.Config["Region"] != "global" {
		t.Errorf("got member %+v stats %v, want node-parity, a leading server", self.Member, self.Stats)
	}
}

func callAgentMembers(t *testing.T, p *parity) {
	m, err := p.c.Agent().Members()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Members) != 1 || !strings.HasPrefix(m.Members[0].Name, "node-parity") || m.Members[0].Status != "alive" || m.ServerRegion != "global" {
		t.Errorf("got %+v, want node-parity alive", m)
	}
}

func callAgentServers(t *testing.T, p *parity) {
	servers, err := p.c.Agent().Servers()
	if err != nil {
		t.Fatal(err)
	}
	leader, err := p.c.Status().Leader()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(servers, []string{leader}) {
		t.Errorf("got %v, want the one server %s", servers, leader)
	}
}

func callStatusLeader(t *testing.T, p *parity) {
	leader, err := p.c.Status().Leader()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(leader, "127.0.0.1:") {
		t.Errorf("got %q, want the server's RPC address", leader)
	}
}

func callStatusPeers(t *testing.T, p *parity) {
	peers, err := p.c.Status().Peers()
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 1 || !strings.HasPrefix(peers[0], "127.0.0.1:") {
		t.Errorf("got %v, want the one server", peers)
	}
}

func callRegionsList(t *testing.T, p *parity) {
	regions, err := p.c.Regions().List()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(regions, []string{"global"}) {
		t.Errorf("got %v, want [global]", regions)
	}
}

func callNamespacesRegister(t *testing.T, p *parity) {
	if _, err := p.c.Namespaces().Register(&nomad.Namespace{Name: "team-a", Description: "from Nomad's client"}, nil); err != nil {
		t.Fatal(err)
	}
}

func callNamespacesInfo(t *testing.T, p *parity) {
	ns, _, err := p.c.Namespaces().Info("team-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ns.Name != "team-a" || ns.Description != "from Nomad's client" {
		t.Errorf("got %+v, want team-a with its description", ns)
	}
}

func callNamespacesList(t *testing.T, p *parity) {
	list, _, err := p.c.Namespaces().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range list {
		names = append(names, ns.Name)
	}
	if !slices.Contains(names, "default") || !slices.Contains(names, "team-a") {
		t.Errorf("got %v, want default and team-a", names)
	}
}

func callNamespacesDelete(t *testing.T, p *parity) {
	if _, err := p.c.Namespaces().Delete("team-a", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.c.Namespaces().Info("team-a", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("after delete: %v, want a 404", err)
	}
}

// Drover's quota limits are CPU, MemoryMB, GPUs and GPUMemoryMB; Nomad's
// RegionLimit is a Resources block, so CPU and MemoryMB are what the
// two share.
func callQuotasRegister(t *testing.T, p *parity) {
	spec := &nomad.QuotaSpec{Name: "small", Description: "cpu cap", Limits: []*nomad.QuotaLimit{{Region: "global", RegionLimit: &nomad.QuotaResources{CPU: intp(4000), MemoryMB: intp(8192)}}}}
	if _, err := p.c.Quotas().Register(spec, nil); err != nil {
		t.Fatal(err)
	}
}

func callQuotasInfo(t *testing.T, p *parity) {
	q, _, err := p.c.Quotas().Info("small", nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.Name != "small" || len(q.Limits) != 1 || q.Limits[0].RegionLimit == nil || q.Limits[0].RegionLimit.CPU == nil || *q.Limits[0].RegionLimit.CPU != 4000 {
		t.Errorf("got %+v, want small with a CPU limit of 4000", q)
	}
}

func callQuotasList(t *testing.T, p *parity) {
	list, _, err := p.c.Quotas().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "small" {
		t.Errorf("got %+v, want small", list)
	}
}

func callOperatorRaft(t *testing.T, p *parity) {
	cfg, err := p.c.Operator().RaftGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 1 || !cfg.Servers[0].Leader || !cfg.Servers[0].Voter {
		t.Errorf("got %+v, want one leading voter", cfg.Servers)
	}
}

func callOperatorScheduler(t *testing.T, p *parity) {
	resp, _, err := p.c.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.SchedulerConfig == nil || resp.SchedulerConfig.SchedulerAlgorithm == "" {
		t.Errorf("got %+v, want a scheduler configuration", resp.SchedulerConfig)
	}
}

func callSearchPrefix(t *testing.T, p *parity) {
	p.needAlloc(t)
	resp, _, err := p.c.Search().PrefixSearch("par", contexts.Jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resp.Matches[contexts.Jobs], []string{"parity"}) || resp.Truncations[contexts.Jobs] {
		t.Errorf("jobs: got %v %v, want [parity]", resp.Matches, resp.Truncations)
	}
	all, _, err := p.c.Search().PrefixSearch(p.allocs[0].ID[:8], contexts.All, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(all.Matches[contexts.Allocs], p.allocs[0].ID) {
		t.Errorf("all: got %v, want the allocation", all.Matches)
	}
}

func callSearchFuzzy(t *testing.T, p *parity) {
	resp, _, err := p.c.Search().FuzzySearch("ARIT", contexts.All, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs := resp.Matches[contexts.Jobs]
	if len(jobs) != 1 || jobs[0].ID != "parity" || !slices.Equal(jobs[0].Scope, []string{"default", "parity"}) {
		t.Errorf("jobs: got %+v, want parity scoped to default", jobs)
	}
	if nodes := resp.Matches[contexts.Nodes]; len(nodes) != 1 || nodes[0].ID != "node-parity" {
		t.Errorf("nodes: got %+v, want node-parity", nodes)
	}
}

func callEventStream(t *testing.T, p *parity) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, err := p.c.EventStream().Stream(ctx, map[nomad.Topic][]string{nomad.TopicJob: {"streamed"}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.c.Jobs().Register(parityJob("streamed", 0), nil); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case <-ctx.Done():
			t.Fatal("no event for the job in 20s")
		case evs := <-events:
			if evs.Err != nil {
				t.Fatal(evs.Err)
			}
			for _, e := range evs.Events {
				if e.Topic == nomad.TopicJob && e.Key == "streamed" {
					if job, err := e.Job(); err != nil || job == nil || *job.ID != "streamed" {
						t.Errorf("event payload: %+v, %v", job, err)
					}
					return
				}
			}
		}
	}
}

func callJobsParseHCL(t *testing.T, p *parity) {
	job, err := p.c.Jobs().ParseHCL(`job "parsed" {
  datacenters = ["dc1"]
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`, true)
	if err != nil {
		t.Fatal(err)
	}
	if *job.ID != "parsed" || len(job.TaskGroups) != 1 || job.TaskGroups[0].Tasks[0].Driver != "raw_exec" {
		t.Errorf("got %+v, want the parsed job", job)
	}
}

// runningAlloc is the parity job's allocation in full, as the calls on a
// live allocation take it.
func (p *parity) runningAlloc(t *testing.T) *nomad.Allocation {
	p.needAlloc(t)
	alloc, _, err := p.c.Allocations().Info(p.allocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	return alloc
}

func callAllocationsStats(t *testing.T, p *parity) {
	usage, err := p.c.Allocations().Stats(p.runningAlloc(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Drover's allocation stats are its GPUs' (Devices, which Nomad's
	// type drops); per-task CPU and memory usage is not reported yet.
	if usage.Timestamp == 0 {
		t.Errorf("got %+v, want a timestamp", usage)
	}
}

func callNodesStats(t *testing.T, p *parity) {
	p.needAlloc(t)
	stats, err := p.c.Nodes().Stats(p.allocs[0].NodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Memory == nil || stats.Memory.Total == 0 || len(stats.DeviceStats) == 0 {
		t.Errorf("got %+v, want memory and the GPUs' stats", stats)
	}
}

func callAllocFSList(t *testing.T, p *parity) {
	files, _, err := p.c.AllocFS().List(p.runningAlloc(t), "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(files, func(f *nomad.AllocFileInfo) bool { return f.Name == "sleeper" && f.IsDir }) {
		t.Errorf("got %+v, want the sleeper task's directory", files)
	}
}

func callAllocationsSignal(t *testing.T, p *parity) {
	if err := p.c.Allocations().Signal(p.runningAlloc(t), nil, "sleeper", "SIGCONT"); err != nil {
		t.Fatal(err)
	}
}

func callAllocationsRestart(t *testing.T, p *parity) {
	alloc := p.runningAlloc(t)
	if err := p.c.Allocations().Restart(alloc, "sleeper", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a restart event", func() bool {
		a, _, err := p.c.Allocations().Info(alloc.ID, nil)
		return err == nil && a.TaskStates["sleeper"] != nil && a.TaskStates["sleeper"].Restarts >= 1
	})
}

func callOperatorSchedulerSet(t *testing.T, p *parity) {
	cur, _, err := p.c.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	conf := *cur.SchedulerConfig
	conf.PreemptionConfig.BatchSchedulerEnabled = true
	resp, _, err := p.c.Operator().SchedulerSetConfiguration(&conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Updated {
		t.Errorf("got %+v, want Updated", resp)
	}
	after, _, err := p.c.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !after.SchedulerConfig.PreemptionConfig.BatchSchedulerEnabled {
		t.Errorf("got %+v, want batch preemption on", after.SchedulerConfig.PreemptionConfig)
	}
}

func callSystemGC(t *testing.T, p *parity) {
	if err := p.c.System().GarbageCollect(); err != nil {
		t.Fatal(err)
	}
}

func callJobsDeregister(t *testing.T, p *parity) {
	evalID, _, err := p.c.Jobs().Deregister("parity", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if evalID == "" {
		t.Error("got no eval ID")
	}
	if _, _, err := p.c.Jobs().Info("parity", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("after purge: %v, want a 404", err)
	}
}

// needAlloc skips a call that needs the allocation Jobs.Allocations found.
func (p *parity) needAlloc(t *testing.T) {
	if len(p.allocs) == 0 {
		t.Fatal("no allocation: Jobs.Allocations failed")
	}
}
