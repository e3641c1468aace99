package fsm

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/droverhq/drover/server/state"
	"github.com/droverhq/drover/structs"
)

func gpuQuota(name string, gpus int64) *structs.QuotaSpec {
	return &structs.QuotaSpec{Name: name, Limits: []*structs.QuotaLimit{
		{Region: "global", RegionLimit: &structs.RegionLimit{GPUs: gpus}},
	}}
}

// TestApplyNamespacesAndQuotas: upserts and deletes apply, refusals are
// answers (not crashes) that change nothing, and quota or namespace
// upserts retry blocked evaluations (a capacity change).
func TestApplyNamespacesAndQuotas(t *testing.T) {
	f, rec := newTestFSM(t)
	apply(t, f, 1, structs.QuotaUpsertRequestType, &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{gpuQuota("gpus", 2)}})
	checkNotified(t, rec, nil, []uint64{1})
	apply(t, f, 2, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team-a", Quota: "gpus"}}})
	checkNotified(t, rec, nil, []uint64{2})
	apply(t, f, 3, structs.QuotaUpsertRequestType, &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{gpuQuota("gpus", 3)}})
	checkNotified(t, rec, nil, []uint64{3})
	if q, _ := f.State().QuotaSpecByName(nil, "gpus"); q == nil || q.LimitFor("global").GPUs != 3 || q.CreateIndex != 1 {
		t.Fatalf("quota after raise = %+v, want 3 GPUs created at 1", q)
	}

	refusals := []struct {
		name string
		typ  structs.MessageType
		msg  any
		want error
	}{
		{"delete default namespace", structs.NamespaceDeleteRequestType, &structs.NamespaceDeleteRequest{Namespaces: []string{"default"}}, structs.ErrDefaultNamespace},
		{"delete quota in use", structs.QuotaDeleteRequestType, &structs.QuotaSpecDeleteRequest{Names: []string{"gpus"}}, structs.ErrQuotaInUse},
		{"namespace with unknown quota", structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "x", Quota: "nope"}}}, structs.ErrInvalid},
		{"nil quota", structs.QuotaUpsertRequestType, &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{{Name: "q", Limits: []*structs.QuotaLimit{nil}}}}, structs.ErrInvalid},
	}
	for i, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.Apply(logEntry(t, uint64(10+i), tt.typ, tt.msg))
			if err, _ := resp.(error); !errors.Is(err, tt.want) {
				t.Fatalf("got answer %v, want %v", resp, tt.want)
			}
		})
	}
	rec.take()
	if idx, _ := f.State().Index(state.TableNamespaces); idx != 2 {
		t.Errorf("namespaces index after refusals = %d, want 2", idx)
	}

	apply(t, f, 20, structs.NamespaceDeleteRequestType, &structs.NamespaceDeleteRequest{Namespaces: []string{"team-a"}})
	apply(t, f, 21, structs.QuotaDeleteRequestType, &structs.QuotaSpecDeleteRequest{Names: []string{"gpus"}})
	checkNotified(t, rec, nil, nil)
	if ns, _ := f.State().NamespaceByName(nil, "team-a"); ns != nil {
		t.Errorf("namespace after delete = %+v, want none", ns)
	}
}

// TestSnapshotRestoreNamespaces: namespaces and quotas survive a snapshot,
// and the quota usage derived from allocations is rebuilt.
func TestSnapshotRestoreNamespaces(t *testing.T) {
	src, _ := newTestFSM(t)
	populate(t, src)
	apply(t, src, 7, structs.QuotaUpsertRequestType, &structs.QuotaSpecUpsertRequest{Quotas: []*structs.QuotaSpec{gpuQuota("gpus", 2)}})
	apply(t, src, 8, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{
		{Name: "default", Quota: "gpus", Meta: map[string]string{"owner": "ml"}}, {Name: "team"},
	}})
	sink := persist(t, src)

	dst, _ := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	for _, read := range []func(s *state.StateStore) (any, error){
		func(s *state.StateStore) (any, error) { return s.Namespaces(nil, "") },
		func(s *state.StateStore) (any, error) { return s.QuotaSpecs(nil, "") },
		func(s *state.StateStore) (any, error) { return s.QuotaUsage(nil, "gpus") },
		func(s *state.StateStore) (any, error) { return s.Indexes() },
	} {
		want, err := read(src.State())
		if err != nil {
			t.Fatal(err)
		}
		got, err := read(dst.State())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("restored %T differs:\n got %+v\nwant %+v", got, got, want)
		}
	}
	// populate placed one whole H100 (80 GiB) in the default namespace.
	u, _ := dst.State().QuotaUsage(nil, "gpus")
	if u == nil || u.Used.GPUCompute != structs.WholeGPU || u.Used.GPUMemoryMB != 80<<10 {
		t.Errorf("restored usage = %+v, want one 80 GiB GPU", u)
	}
}
