package server

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

func upsertQuota(t *testing.T, s *Server, name string, gpus int64) {
	t.Helper()
	q := &structs.QuotaSpec{Name: name, Limits: []*structs.QuotaLimit{{Region: "global", RegionLimit: &structs.RegionLimit{GPUs: gpus}}}}
	var resp structs.GenericResponse
	if err := s.RPC(structs.RPCQuotaUpsert, &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{q}}, &resp); err != nil {
		t.Fatalf("Quota.Upsert: %v", err)
	}
	if resp.Index == 0 {
		t.Errorf("Quota.Upsert answered index 0")
	}
}

// TestServer_QuotaRaiseWakesBlockedEval is must-hold 3 through a real
// server (Raft, FSM, broker, workers, plan applier): namespace team-a
// with a quota of 2 GPUs runs 2 of 3 single-GPU allocations, the third
// waits in a blocked evaluation whose reason names the quota, and
// raising the quota places it.
func TestServer_QuotaRaiseWakesBlockedEval(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := dialRPC(t, s.RPCAddr())
	registerNode(t, c, gpuNode("n1", 8))
	upsertQuota(t, s, "team-a-gpus", 2)
	var gen structs.GenericResponse
	if err := s.RPC(structs.RPCNamespaceUpsert, &structs.NamespaceUpsertRequest{
		Namespaces: []*structs.Namespace{{Name: "team-a", Quota: "team-a-gpus"}},
	}, &gen); err != nil {
		t.Fatalf("Namespace.Upsert: %v", err)
	}

	job := gpuJob("train", structs.JobTypeBatch, 3, 1)
	job.Namespace = "team-a"
	resp := registerJob(t, s, job)
	teamLive := func() int {
		all, err := s.State().AllocsByJob(nil, "team-a", "train")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range all {
			if !a.TerminalStatus() {
				n++
			}
		}
		return n
	}
	var blocked *structs.Evaluation
	waitFor(t, 5*time.Second, func() (bool, string) {
		e := evalByID(t, s, resp.EvalID)
		if e.Status != structs.EvalStatusComplete || e.BlockedEval == "" {
			return false, "eval " + e.Status + ", no blocked eval"
		}
		blocked = evalByID(t, s, e.BlockedEval)
		return blocked != nil, "blocked eval not in state"
	})
	if n := teamLive(); n != 2 {
		t.Fatalf("live allocations = %d, want 2", n)
	}
	want := `quota "team-a-gpus" exhausted: gpu 2 of 2 used, need 1`
	if m := blocked.FailedTGAllocs["train"]; m == nil || !slices.Equal(m.QuotaExhausted, []string{want}) {
		t.Fatalf("blocked eval metric = %+v, want QuotaExhausted [%q]", m, want)
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		return s.blocked.Stats().TotalBlocked == 1, "blocked eval not tracked"
	})

	upsertQuota(t, s, "team-a-gpus", 3)
	waitFor(t, 5*time.Second, func() (bool, string) {
		return teamLive() == 3, "third allocation not placed after the quota was raised"
	})
	waitFor(t, 5*time.Second, func() (bool, string) {
		e := evalByID(t, s, blocked.ID)
		return e.Status == structs.EvalStatusComplete, "blocked eval status " + e.Status
	})

	var usage structs.QuotaUsageResponse
	if err := s.RPC(structs.RPCQuotaUsage, &structs.QuotaSpecificRequest{Name: "team-a-gpus"}, &usage); err != nil {
		t.Fatalf("Quota.Usage: %v", err)
	}
	if usage.Usage == nil || usage.Usage.Used.GPUCompute != 3*structs.WholeGPU || usage.Limit == nil || usage.Limit.GPUs != 3 {
		t.Errorf("usage = %+v limit %+v, want 3 GPUs of 3", usage.Usage, usage.Limit)
	}
}

// TestServer_NamespaceRefusals: writes that would break the namespace
// rules are refused with ErrInvalid or ErrNotFound and change nothing.
func TestServer_NamespaceRefusals(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	upsertQuota(t, s, "q", 1)
	var gen structs.GenericResponse
	if err := s.RPC(structs.RPCNamespaceUpsert, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team-a", Quota: "q"}}}, &gen); err != nil {
		t.Fatal(err)
	}
	job := gpuJob("train", structs.JobTypeBatch, 1, 0)
	job.Namespace = "team-a"
	registerJob(t, s, job)
	tableIndexes := func() [2]uint64 {
		ns, err1 := s.State().Index(state.TableNamespaces)
		q, err2 := s.State().Index(state.TableQuotas)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		return [2]uint64{ns, q}
	}
	before := tableIndexes()

	elsewhere := gpuJob("lost", structs.JobTypeBatch, 1, 0)
	elsewhere.Namespace = "nope"
	tests := []struct {
		name   string
		method string
		args   any
		reply  any
		want   error
	}{
		{"job in an unknown namespace", structs.RPCJobRegister, &structs.JobRegisterRequest{Job: elsewhere}, &structs.JobRegisterResponse{}, structs.ErrInvalid},
		{"delete default", structs.RPCNamespaceDelete, &structs.NamespaceDeleteRequest{Namespaces: []string{"default"}}, &gen, structs.ErrDefaultNamespace},
		{"delete namespace with jobs", structs.RPCNamespaceDelete, &structs.NamespaceDeleteRequest{Namespaces: []string{"team-a"}}, &gen, structs.ErrNamespaceInUse},
		{"delete unknown namespace", structs.RPCNamespaceDelete, &structs.NamespaceDeleteRequest{Namespaces: []string{"nope"}}, &gen, structs.ErrNotFound},
		{"delete quota in use", structs.RPCQuotaDelete, &structs.QuotaSpecDeleteRequest{Names: []string{"q"}}, &gen, structs.ErrQuotaInUse},
		{"namespace with unknown quota", structs.RPCNamespaceUpsert, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "b", Quota: "nope"}}}, &gen, structs.ErrInvalid},
		{"quota without limits", structs.RPCQuotaUpsert, &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{{Name: "empty"}}}, &gen, structs.ErrInvalid},
		{"nil quota limit", structs.RPCQuotaUpsert, &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{{Name: "x", Limits: []*structs.QuotaLimit{nil}}}}, &gen, structs.ErrInvalid},
		{"nothing to upsert", structs.RPCNamespaceUpsert, &structs.NamespaceUpsertRequest{}, &gen, structs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.RPC(tt.method, tt.args, tt.reply); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	if after := tableIndexes(); after != before {
		t.Errorf("refused writes moved the namespace and quota indexes from %v to %v", before, after)
	}

	var list structs.NamespaceListResponse
	if err := s.RPC(structs.RPCNamespaceList, &structs.NamespaceListRequest{}, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range list.Namespaces {
		names = append(names, ns.Name)
	}
	if !slices.Equal(names, []string{"default", "team-a"}) || list.Index == 0 {
		t.Errorf("Namespace.List = %v at %d, want [default team-a]", names, list.Index)
	}
}
