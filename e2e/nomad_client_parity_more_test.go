package e2e

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// The parity calls on periodic and parameterized jobs, variables, node
// eligibility and the keyring.

// batchJob is a batch job whose one task runs /bin/true.
func batchJob(id string) *nomad.Job {
	job := nomad.NewBatchJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	job.AddTaskGroup(nomad.NewTaskGroup("g", 1).AddTask(nomad.NewTask("t", "raw_exec").SetConfig("command", "/bin/true").
		Require(&nomad.Resources{CPU: intp(50), MemoryMB: intp(32)})))
	job.Canonicalize()
	return job
}

func callJobsPeriodicForce(t *testing.T, p *parity) {
	job := batchJob("cron")
	job.Periodic = &nomad.PeriodicConfig{Spec: new("0 0 1 1 *"), ProhibitOverlap: new(true)}
	if _, _, err := p.c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	evalID, _, err := p.c.Jobs().PeriodicForce("cron", nil)
	if err != nil {
		t.Fatal(err)
	}
	if evalID == "" {
		t.Fatal("got no eval ID")
	}
	ev, _, err := p.c.Evaluations().Info(evalID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ev.JobID, "cron/periodic-") {
		t.Errorf("eval's job %q, want a cron/periodic- child", ev.JobID)
	}
	child, _, err := p.c.Jobs().Info(ev.JobID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *child.ParentID != "cron" || child.Periodic != nil && child.Periodic.Enabled != nil && *child.Periodic.Enabled {
		t.Errorf("child %s: parent %q, periodic %+v; want parent cron and no cron of its own", *child.ID, *child.ParentID, child.Periodic)
	}
}

func callJobsDispatch(t *testing.T, p *parity) {
	job := batchJob("render")
	job.ParameterizedJob = &nomad.ParameterizedJobConfig{Payload: "optional", MetaOptional: []string{"who"}}
	if _, _, err := p.c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	resp, _, err := p.c.Jobs().Dispatch("render", map[string]string{"who": "alice"}, []byte("hello"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.DispatchedJobID, "render/dispatch-") || resp.EvalID == "" {
		t.Fatalf("got %+v, want a render/dispatch- child and an eval", resp)
	}
	child, _, err := p.c.Jobs().Info(resp.DispatchedJobID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *child.ParentID != "render" || !child.Dispatched || child.Meta["who"] != "alice" || string(child.Payload) != "hello" {
		t.Errorf("child: parent %q dispatched %v meta %v payload %q; want render's child with who=alice and hello",
			*child.ParentID, child.Dispatched, child.Meta, child.Payload)
	}
	if _, _, err := p.c.Jobs().Dispatch("render", map[string]string{"what": "x"}, nil, "", nil); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("dispatch with unknown meta: %v, want a 400", err)
	}
}

func callVariablesCreate(t *testing.T, p *parity) {
	v, _, err := p.c.Variables().Create(&nomad.Variable{Path: "parity/db", Items: nomad.VariableItems{"user": "admin"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Path != "parity/db" || v.Namespace != "default" || v.ModifyIndex == 0 || v.Items["user"] != "admin" {
		t.Errorf("got %+v, want parity/db stored with its items", v)
	}
}

func callVariablesRead(t *testing.T, p *parity) {
	v, _, err := p.c.Variables().Read("parity/db", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Items["user"] != "admin" || v.CreateIndex == 0 || v.CreateIndex != v.ModifyIndex {
		t.Errorf("got %+v, want user=admin", v)
	}
	if _, _, err := p.c.Variables().Read("parity/none", nil); !errors.Is(err, nomad.ErrVariablePathNotFound) {
		t.Errorf("read a missing path: %v, want ErrVariablePathNotFound", err)
	}
}

func callVariablesPeek(t *testing.T, p *parity) {
	v, _, err := p.c.Variables().Peek("parity/db", nil)
	if err != nil {
		t.Fatal(err)
	}
	none, _, err := p.c.Variables().Peek("parity/none", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v == nil || v.Items["user"] != "admin" || none != nil {
		t.Errorf("got %+v and %+v, want parity/db and nothing", v, none)
	}
}

func callVariablesList(t *testing.T, p *parity) {
	list, _, err := p.c.Variables().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	pre, _, err := p.c.Variables().PrefixList("parity/", nil)
	if err != nil {
		t.Fatal(err)
	}
	none, _, err := p.c.Variables().PrefixList("zzz", nil)
	if err != nil {
		t.Fatal(err)
	}
	has := func(l []*nomad.VariableMetadata) bool {
		return slices.ContainsFunc(l, func(m *nomad.VariableMetadata) bool { return m.Path == "parity/db" })
	}
	if !has(list) || !has(pre) || len(none) != 0 {
		t.Errorf("got %+v, %+v, %+v; want parity/db in the first two only", list, pre, none)
	}
}

func callVariablesCheckedUpdate(t *testing.T, p *parity) {
	cur, _, err := p.c.Variables().Read("parity/db", nil)
	if err != nil {
		t.Fatal(err)
	}
	stale := cur.ModifyIndex
	cur.Items["user"] = "admin2"
	next, _, err := p.c.Variables().CheckedUpdate(cur, nil)
	if err != nil {
		t.Fatal(err)
	}
	if next.ModifyIndex <= stale || next.Items["user"] != "admin2" {
		t.Errorf("got %+v, want admin2 at a later index", next)
	}
	old := &nomad.Variable{Path: "parity/db", Items: nomad.VariableItems{"user": "mallory"}, ModifyIndex: stale}
	_, _, err = p.c.Variables().CheckedUpdate(old, nil)
	var conflict nomad.ErrCASConflict
	if !errors.As(err, &conflict) || conflict.Conflict == nil || conflict.Conflict.ModifyIndex != next.ModifyIndex || conflict.CheckIndex != stale {
		t.Fatalf("stale update: %v, want a CAS conflict showing index %d", err, next.ModifyIndex)
	}
}

func callVariablesUpdate(t *testing.T, p *parity) {
	v, _, err := p.c.Variables().Update(&nomad.Variable{Path: "parity/db", Items: nomad.VariableItems{"user": "admin3", "pass": "x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Items["user"] != "admin3" || v.Items["pass"] != "x" {
		t.Errorf("got %+v, want admin3 and pass", v)
	}
}

func callVariablesDelete(t *testing.T, p *parity) {
	if _, err := p.c.Variables().Delete("parity/db", nil); err != nil {
		t.Fatal(err)
	}
	v, _, err := p.c.Variables().Peek("parity/db", nil)
	if err != nil || v != nil {
		t.Errorf("after delete: %+v, %v; want nothing", v, err)
	}
}

func callNodesToggleEligibility(t *testing.T, p *parity) {
	nodes, _, err := p.c.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("list: %v %v", nodes, err)
	}
	id := nodes[0].ID
	if _, err := p.c.Nodes().ToggleEligibility(id, false, nil); err != nil {
		t.Fatal(err)
	}
	p.wantEligibility(t, id, "ineligible")
	plan, _, err := p.c.Jobs().Plan(batchJob("elig"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plan.FailedTGAllocs["g"] == nil {
		t.Errorf("plan on an ineligible node: failed %+v, want g unplaced", plan.FailedTGAllocs)
	}
	resp, err := p.c.Nodes().ToggleEligibility(id, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.NodeModifyIndex == 0 {
		t.Errorf("got %+v, want the node's index", resp)
	}
	p.wantEligibility(t, id, "eligible")
	if plan, _, err = p.c.Jobs().Plan(batchJob("elig"), false, nil); err != nil || plan.FailedTGAllocs["g"] != nil {
		t.Errorf("plan on an eligible node: %+v, %v; want it placed", plan.FailedTGAllocs, err)
	}
}

func (p *parity) wantEligibility(t *testing.T, id, want string) {
	t.Helper()
	node, _, err := p.c.Nodes().Info(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if node.SchedulingEligibility != want {
		t.Errorf("eligibility %q, want %q", node.SchedulingEligibility, want)
	}
}

func callKeyringList(t *testing.T, p *parity) {
	keys, _, err := p.c.Keyring().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(keys, func(k *nomad.RootKeyMeta) bool { return k.State == nomad.RootKeyStateActive && k.KeyID != "" }) {
		t.Errorf("got %+v, want an active key", keys)
	}
}

func callKeyringRotate(t *testing.T, p *parity) {
	key, _, err := p.c.Keyring().Rotate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, _, err := p.c.Keyring().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	var active []string
	for _, k := range keys {
		if k.State == nomad.RootKeyStateActive {
			active = append(active, k.KeyID)
		}
	}
	if key == nil || len(keys) < 2 || !slices.Equal(active, []string{key.KeyID}) {
		t.Errorf("rotated to %+v; keys %+v; want the new key the one active", key, keys)
	}
}

func callJobsValidate(t *testing.T, p *parity) {
	ok, _, err := p.c.Jobs().Validate(batchJob("checked"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok.Error != "" || len(ok.ValidationErrors) != 0 {
		t.Errorf("valid job: got %+v, want no errors", ok)
	}
	bad := batchJob("checked")
	bad.TaskGroups[0].Tasks[0].Driver = ""
	resp, _, err := p.c.Jobs().Validate(bad, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error == "" || len(resp.ValidationErrors) == 0 || !strings.Contains(resp.Error, "driver") {
		t.Errorf("task without a driver: got %+v, want an error naming the driver", resp)
	}
	if _, _, err := p.c.Jobs().Info("checked", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("validate stored the job: %v", err)
	}
}

func callJobsScaleStatus(t *testing.T, p *parity) {
	var st *nomad.JobScaleStatusResponse
	waitFor(t, 30*time.Second, "both of parity's allocations running", func() bool {
		var err error
		st, _, err = p.c.Jobs().ScaleStatus("parity", nil)
		if err != nil {
			t.Fatal(err)
		}
		return st.TaskGroups["g"].Running == 2
	})
	g := st.TaskGroups["g"]
	if st.JobID != "parity" || st.Namespace != "default" || st.JobStopped || g.Desired != 2 || g.Placed != 2 {
		t.Errorf("got %+v, group %+v; want g desired and placed 2", st, g)
	}
	if _, _, err := p.c.Jobs().ScaleStatus("nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown job: %v, want a 404", err)
	}
}

func callJobsEnforceRegister(t *testing.T, p *parity) {
	job, _, err := p.c.Jobs().Info("parity", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.c.Jobs().EnforceRegister(job, *job.JobModifyIndex-1, nil); err == nil || !strings.Contains(err.Error(), "modify index") {
		t.Errorf("stale index: %v, want a conflict naming the modify index", err)
	}
	resp, _, err := p.c.Jobs().EnforceRegister(job, *job.JobModifyIndex, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.JobModifyIndex < *job.JobModifyIndex {
		t.Errorf("got %+v, want an index not below %d", resp, *job.JobModifyIndex)
	}
}

func callPrefixLists(t *testing.T, p *parity) {
	p.needAlloc(t)
	a := p.allocs[0]
	nodes, _, err := p.c.Nodes().PrefixList(a.NodeID[:6])
	if err != nil || len(nodes) != 1 || nodes[0].ID != a.NodeID {
		t.Errorf("nodes: %+v, %v; want %s", nodes, err, a.NodeID)
	}
	allocs, _, err := p.c.Allocations().PrefixList(a.ID[:8])
	if err != nil || len(allocs) != 1 || allocs[0].ID != a.ID {
		t.Errorf("allocations: %+v, %v; want %s", allocs, err, a.ID)
	}
	evals, _, err := p.c.Evaluations().PrefixList(p.evalID[:8])
	if err != nil || len(evals) != 1 || evals[0].ID != p.evalID {
		t.Errorf("evaluations: %+v, %v; want %s", evals, err, p.evalID)
	}
}

func callAgentHealth(t *testing.T, p *parity) {
	h, err := p.c.Agent().Health()
	if err != nil {
		t.Fatal(err)
	}
	if h.Server == nil || !h.Server.Ok || h.Client == nil || !h.Client.Ok {
		t.Errorf("got server %+v client %+v, want both ok", h.Server, h.Client)
	}
}

func callAllocationsStop(t *testing.T, p *parity) {
	job := batchJob("stopme")
	job.TaskGroups[0].Tasks[0].SetConfig("command", "/bin/sleep").SetConfig("args", []string{"600"})
	if _, _, err := p.c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var alloc *nomad.AllocationListStub
	waitFor(t, 30*time.Second, "stopme running", func() bool {
		allocs, _, err := p.c.Jobs().Allocations("stopme", false, nil)
		if err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running" {
			alloc = allocs[0]
		}
		return alloc != nil
	})
	full, _, err := p.c.Allocations().Info(alloc.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.c.Allocations().Stop(full, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" {
		t.Errorf("got %+v, want an eval", resp)
	}
	waitFor(t, 30*time.Second, "the allocation stopped", func() bool {
		a, _, err := p.c.Allocations().Info(alloc.ID, nil)
		return err == nil && a.DesiredStatus == "stop" && a.ClientStatus != "running"
	})
	if _, _, err := p.c.Jobs().Deregister("stopme", true, nil); err != nil {
		t.Error(err)
	}
}

func callVariablesCheckedCreateAndDelete(t *testing.T, p *parity) {
	v, _, err := p.c.Variables().CheckedCreate(&nomad.Variable{Path: "parity/cas", Items: nomad.VariableItems{"a": "1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var conflict nomad.ErrCASConflict
	_, _, err = p.c.Variables().CheckedCreate(&nomad.Variable{Path: "parity/cas", Items: nomad.VariableItems{"a": "2"}}, nil)
	if !errors.As(err, &conflict) || conflict.Conflict == nil || conflict.Conflict.ModifyIndex != v.ModifyIndex {
		t.Errorf("create over an existing variable: %v, want a CAS conflict at %d", err, v.ModifyIndex)
	}
	_, err = p.c.Variables().CheckedDelete("parity/cas", v.ModifyIndex-1, nil)
	if !errors.As(err, &conflict) || conflict.Conflict == nil || conflict.Conflict.ModifyIndex != v.ModifyIndex {
		t.Errorf("delete at a stale index: %v, want a CAS conflict at %d", err, v.ModifyIndex)
	}
	if _, err := p.c.Variables().CheckedDelete("parity/cas", v.ModifyIndex, nil); err != nil {
		t.Fatal(err)
	}
	if got, _, err := p.c.Variables().Peek("parity/cas", nil); err != nil || got != nil {
		t.Errorf("after delete: %+v, %v; want nothing", got, err)
	}
}
