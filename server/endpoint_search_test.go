package server

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestSearch_PrefixAndFuzzy: searches show only what the token may read,
// stop at structs.SearchLimit per context and say so, and refuse
// contexts Drover does not search.
func TestSearch_PrefixAndFuzzy(t *testing.T) {
	t.Parallel()
	s, mgmt := aclServer(t)
	ns := &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team-b"}}}
	ns.AuthToken = mgmt
	call(t, s, structs.RPCNamespaceUpsert, ns, &structs.GenericResponse{})
	register := func(id, namespace string) {
		job := gpuJob(id, structs.JobTypeBatch, 1, 0)
		job.Namespace = namespace
		reg := &structs.JobRegisterRequest{Job: job}
		reg.AuthToken = mgmt
		call(t, s, structs.RPCJobRegister, reg, &structs.JobRegisterResponse{})
	}
	register("web-a", "default")
	register("web-b", "team-b")
	for i := range structs.SearchLimit + 2 {
		register(fmt.Sprintf("bulk-%02d", i), "default")
	}
	reader := clientToken(t, s, mgmt, "default-reader", `namespace "default" { policy = "read" }`).SecretID

	prefix := func(token, prefix, ctx, namespace string) (*structs.SearchResponse, error) {
		var out structs.SearchResponse
		err := s.RPC(structs.RPCSearchPrefix, &structs.SearchRequest{Prefix: prefix, Context: ctx,
			QueryOptions: structs.QueryOptions{AuthToken: token, Namespace: namespace}}, &out)
		return &out, err
	}
	tests := []struct {
		name, token, prefix, ctx, ns string
		want                         map[string][]string
	}{
		{"management sees every namespace", mgmt, "web", "jobs", "*", map[string][]string{"jobs": {"web-a", "web-b"}}},
		{"a reader of default sees its job only", reader, "web", "jobs", "*", map[string][]string{"jobs": {"web-a"}}},
		{"all: the contexts the reader may read", reader, "web", "all", "default",
			map[string][]string{"jobs": {"web-a"}, "evals": {}, "allocs": {}, "namespaces": {}}},
		{"namespaces by name", mgmt, "team", "namespaces", "", map[string][]string{"namespaces": {"team-b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prefix(tt.token, tt.prefix, tt.ctx, tt.ns)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Matches) != len(tt.want) {
				t.Errorf("contexts: got %v, want %v", got.Matches, tt.want)
			}
			for ctx, ids := range tt.want {
				if !slices.Equal(got.Matches[ctx], ids) {
					t.Errorf("%s: got %v, want %v", ctx, got.Matches[ctx], ids)
				}
			}
		})
	}

	got, err := prefix(mgmt, "bulk", "jobs", "default")
	if err != nil || len(got.Matches["jobs"]) != structs.SearchLimit || !got.Truncations["jobs"] || got.Matches["jobs"][0] != "bulk-00" {
		t.Errorf("truncation: got %v %v, %v; want %d from bulk-00, truncated", got.Matches, got.Truncations, err, structs.SearchLimit)
	}
	if _, err := prefix(reader, "", "nodes", "default"); !isDenied(err) {
		t.Errorf("nodes without node read: %v, want permission denied", err)
	}
	if _, err := prefix(mgmt, "", "deployment", "default"); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("unknown context: %v, want invalid", err)
	}
	if _, err := prefix("not-a-token", "", "deployment", "default"); !isDenied(err) {
		t.Errorf("unknown context with a bad token: %v, want permission denied before the context is judged", err)
	}

	var fuzzy structs.FuzzySearchResponse
	req := &structs.FuzzySearchRequest{Text: "EB-", Context: "all", QueryOptions: structs.QueryOptions{AuthToken: reader, Namespace: "*"}}
	call(t, s, structs.RPCSearchFuzzy, req, &fuzzy)
	if jobs := fuzzy.Matches["jobs"]; len(jobs) != 1 || jobs[0].ID != "web-a" || !slices.Equal(jobs[0].Scope, []string{"default", "web-a"}) {
		t.Errorf("fuzzy jobs: got %+v, want web-a scoped to default", jobs)
	}
	if _, ok := fuzzy.Matches["nodes"]; ok {
		t.Errorf("fuzzy: got nodes %v for a token without node read", fuzzy.Matches["nodes"])
	}
	req.Text = ""
	if err := s.RPC(structs.RPCSearchFuzzy, req, &fuzzy); !errors.Is(err, structs.ErrInvalid) {
		t.Errorf("empty text: %v, want invalid", err)
	}
}
