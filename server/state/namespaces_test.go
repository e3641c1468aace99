package state

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

func testQuota(name string, gpus int64) *structs.QuotaSpec {
	return &structs.QuotaSpec{Name: name, Limits: []*structs.QuotaLimit{
		{Region: "global", RegionLimit: &structs.RegionLimit{GPUs: gpus}},
	}}
}

func namespaceNames(nss []*structs.Namespace) []string {
	out := make([]string, 0, len(nss))
	for _, ns := range nss {
		out = append(out, ns.Name)
	}
	return out
}

func TestDefaultNamespaceAlwaysExists(t *testing.T) {
	s := newTestStore(t)
	ns, err := s.NamespaceByName(nil, structs.DefaultNamespace)
	must(t, err)
	if ns == nil || ns.Name != structs.DefaultNamespace || ns.Quota != "" {
		t.Fatalf("default namespace in an empty store = %+v, want the built-in one", ns)
	}
	all, err := s.Namespaces(nil, "")
	must(t, err)
	if got := namespaceNames(all); !slices.Equal(got, []string{"default"}) {
		t.Errorf("Namespaces = %v, want [default]", got)
	}
	if err := s.DeleteNamespaces(1, []string{"default"}); !errors.Is(err, structs.ErrDefaultNamespace) || !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("delete default: got %v, want ErrDefaultNamespace (ErrInvalid)", err)
	}

	// The operator attaches a quota to it: it is stored, still listed once.
	must(t, s.UpsertQuotaSpecs(2, []*structs.QuotaSpec{testQuota("shared", 4)}))
	must(t, s.UpsertNamespaces(3, []*structs.Namespace{{Name: "default", Quota: "shared"}}))
	ns, err = s.NamespaceByName(nil, "default")
	must(t, err)
	if ns.Quota != "shared" || ns.CreateIndex != 3 {
		t.Errorf("stored default = %+v, want quota shared at index 3", ns)
	}
	all, err = s.Namespaces(nil, "")
	must(t, err)
	if got := namespaceNames(all); !slices.Equal(got, []string{"default"}) {
		t.Errorf("Namespaces = %v, want [default] once", got)
	}
}

func TestNamespaceWrites(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertNamespaces(1, []*structs.Namespace{{Name: "team-b"}, {Name: "team-a", Description: "A"}}))
	must(t, s.UpsertNamespaces(2, []*structs.Namespace{{Name: "team-a", Description: "A, again"}}))
	a, err := s.NamespaceByName(nil, "team-a")
	must(t, err)
	if a.Description != "A, again" || a.CreateIndex != 1 || a.ModifyIndex != 2 {
		t.Errorf("team-a = %+v, want the new description, created at 1, modified at 2", a)
	}
	all, err := s.Namespaces(nil, "team")
	must(t, err)
	if got := namespaceNames(all); !slices.Equal(got, []string{"team-a", "team-b"}) {
		t.Errorf("Namespaces(team) = %v, want [team-a team-b]", got)
	}
	all, err = s.Namespaces(nil, "")
	must(t, err)
	if got := namespaceNames(all); !slices.Equal(got, []string{"default", "team-a", "team-b"}) {
		t.Errorf("Namespaces = %v, want default first, then sorted", got)
	}

	tests := []struct {
		name string
		in   []*structs.Namespace
		want error
	}{
		{name: "unknown quota", in: []*structs.Namespace{{Name: "x", Quota: "nope"}}, want: structs.ErrInvalid},
		{name: "bad name", in: []*structs.Namespace{{Name: "no spaces"}}, want: structs.ErrInvalid},
		{name: "nil", in: []*structs.Namespace{nil}, want: structs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.UpsertNamespaces(10, tt.in); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	if idx, _ := s.Index(TableNamespaces); idx != 2 {
		t.Errorf("refused writes moved the index to %d, want 2", idx)
	}
}

func TestDeleteNamespaceWithJobsRefused(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertNamespaces(1, []*structs.Namespace{{Name: "team-a"}, {Name: "team-ab"}}))
	job := testJob("train", structs.JobTypeBatch)
	job.Namespace = "team-ab"
	must(t, s.UpsertJob(2, job))

	// A job in team-ab does not hold team-a (a namespace name is not a
	// prefix match).
	must(t, s.DeleteNamespaces(3, []string{"team-a"}))
	err := s.DeleteNamespaces(4, []string{"team-ab"})
	if !errors.Is(err, structs.ErrNamespaceInUse) {
		t.Fatalf("delete namespace with a job: got %v, want ErrNamespaceInUse", err)
	}
	must(t, s.DeleteJob(5, "team-ab", "train"))
	must(t, s.DeleteNamespaces(6, []string{"team-ab"}))
	if err := s.DeleteNamespaces(7, []string{"team-ab"}); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("delete twice: got %v, want ErrNotFound", err)
	}
}

func TestQuotaSpecWrites(t *testing.T) {
	s := newTestStore(t)
	must(t, s.UpsertQuotaSpecs(1, []*structs.QuotaSpec{testQuota("gpus", 2)}))
	must(t, s.UpsertQuotaSpecs(2, []*structs.QuotaSpec{testQuota("gpus", 3)}))
	q, err := s.QuotaSpecByName(nil, "gpus")
	must(t, err)
	if q.LimitFor("global").GPUs != 3 || q.CreateIndex != 1 || q.ModifyIndex != 2 {
		t.Errorf("quota = %+v, want 3 GPUs, created 1, modified 2", q)
	}
	bad := &structs.QuotaSpec{Name: "bad", Limits: []*structs.QuotaLimit{{Region: "global"}}}
	if err := s.UpsertQuotaSpecs(3, []*structs.QuotaSpec{bad}); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("limit without region_limit: got %v, want ErrInvalid", err)
	}

	must(t, s.UpsertNamespaces(4, []*structs.Namespace{{Name: "team-a", Quota: "gpus"}}))
	if err := s.DeleteQuotaSpecs(5, []string{"gpus"}); !errors.Is(err, structs.ErrQuotaInUse) {
		t.Errorf("delete quota in use: got %v, want ErrQuotaInUse", err)
	}
	must(t, s.UpsertNamespaces(6, []*structs.Namespace{{Name: "team-a"}}))
	must(t, s.DeleteQuotaSpecs(7, []string{"gpus"}))
	all, err := s.QuotaSpecs(nil, "")
	must(t, err)
	if len(all) != 0 {
		t.Errorf("quotas after delete = %d, want 0", len(all))
	}
	if err := s.DeleteQuotaSpecs(8, []string{"gpus"}); !errors.Is(err, structs.ErrNotFound) {
		t.Errorf("delete unknown quota: got %v, want ErrNotFound", err)
	}
}

func TestNamespaceReadsWatch(t *testing.T) {
	s := newTestStore(t)
	ws := memdb.NewWatchSet()
	if _, err := s.Namespaces(ws, ""); err != nil {
		t.Fatal(err)
	}
	must(t, s.UpsertNamespaces(1, []*structs.Namespace{{Name: "team-a"}}))
	// The write has fired the channel already; the timeout only bounds a
	// failing run.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ws.WatchCtx(ctx); err != nil {
		t.Errorf("got %v from the namespace list watch after an upsert, want a wake-up", err)
	}
}
