package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// recorded is one request the fake agent saw.
type recorded struct {
	Method string
	Path   string // escaped path
	Query  url.Values
	Body   string
}

// fakeAgent serves canned answers keyed by "METHOD /escaped/path" and
// records what it was asked.
type fakeAgent struct {
	mu     sync.Mutex
	routes map[string]func(w http.ResponseWriter, r *http.Request)
	seen   []recorded
}

func newFakeAgent(t *testing.T) (*fakeAgent, *Client) {
	t.Helper()
	f := &fakeAgent{routes: map[string]func(http.ResponseWriter, *http.Request){}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := NewClient(&Config{Address: srv.URL})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return f, c
}

func (f *fakeAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	key := r.Method + " " + r.URL.EscapedPath()
	f.mu.Lock()
	f.seen = append(f.seen, recorded{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query(), Body: string(body)})
	h := f.routes[key]
	f.mu.Unlock()
	if h == nil {
		http.Error(w, "no route "+key, http.StatusNotFound)
		return
	}
	h(w, r)
}

func (f *fakeAgent) handle(key string, h func(w http.ResponseWriter, r *http.Request)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[key] = h
}

// handleJSON answers key with body as JSON and the read headers.
func (f *fakeAgent) handleJSON(key string, index uint64, body any) {
	f.handle(key, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", fmt.Sprint(index))
		w.Header().Set("X-Nomad-KnownLeader", "true")
		w.Header().Set("X-Nomad-LastContact", "0")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
}

func (f *fakeAgent) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		t.Fatal("no request recorded")
	}
	return f.seen[len(f.seen)-1]
}

func TestNewClientAddress(t *testing.T) {
	tests := []struct {
		name    string
		env     string
		addr    string
		want    string
		wantErr bool
	}{
		{name: "default", want: "http://127.0.0.1:4646"},
		{name: "env", env: "http://10.0.0.1:4646", want: "http://10.0.0.1:4646"},
		{name: "explicit beats env", env: "http://10.0.0.1:4646", addr: "https://a.example:443/", want: "https://a.example:443"},
		{name: "bare host port", addr: "127.0.0.1:9999", want: "http://127.0.0.1:9999"},
		{name: "path prefix kept", addr: "http://proxy/drover/", want: "http://proxy/drover"},
		{name: "bad scheme", addr: "ftp://x:1", wantErr: true},
		{name: "no host", addr: "http://", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvAddress, tt.env)
			cfg := DefaultConfig()
			if tt.addr != "" {
				cfg.Address = tt.addr
			}
			c, err := NewClient(cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewClient(%q) error = %v, want error %v", tt.addr, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := c.Address(); got != tt.want {
				t.Errorf("Address() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestQueryOptionsAndMeta(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handle("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "42")
		w.Header().Set("X-Nomad-KnownLeader", "true")
		w.Header().Set("X-Nomad-LastContact", "1500")
		fmt.Fprint(w, `[{"ID":"train","Type":"batch","Priority":50,"Status":"running","SubmitTime":1700000000000000000}]`)
	})
	jobs, meta, err := c.Jobs().List(context.Background(), &QueryOptions{
		Namespace: "ml", Region: "eu", WaitIndex: 41, WaitTime: 3 * time.Second, Prefix: "tr", AllowStale: true,
	})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(jobs) != 1 || jobs[0].ID != "train" || jobs[0].Type != "batch" || jobs[0].SubmitTime != 1700000000000000000 {
		t.Errorf("jobs = %+v, want the one train job", jobs)
	}
	wantMeta := QueryMeta{LastIndex: 42, KnownLeader: true, LastContact: 1500 * time.Millisecond}
	meta.RequestTime = 0
	if *meta != wantMeta {
		t.Errorf("meta = %+v, want %+v", *meta, wantMeta)
	}
	q := f.last(t).Query
	want := map[string]string{"namespace": "ml", "region": "eu", "index": "41", "wait": "3000ms", "prefix": "tr", "stale": "true"}
	for k, v := range want {
		if got := q.Get(k); got != v {
			t.Errorf("query %s = %q, want %q", k, got, v)
		}
	}
}

func TestDefaultsFromConfig(t *testing.T) {
	f, _ := newFakeAgent(t)
	f.handleJSON("GET /v1/evaluation/abc", 7, &structs.Evaluation{ID: "abc"})
	base, _ := newFakeAgentURL(t, f)
	c, err := NewClient(&Config{Address: base, Namespace: "team-a", Region: "r1", WaitTime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Evaluations().Info(context.Background(), "abc", &QueryOptions{WaitIndex: 5}); err != nil {
		t.Fatalf("Info: %v", err)
	}
	q := f.last(t).Query
	for k, v := range map[string]string{"namespace": "team-a", "region": "r1", "index": "5", "wait": "2000ms"} {
		if got := q.Get(k); got != v {
			t.Errorf("query %s = %q, want %q", k, got, v)
		}
	}
}

// newFakeAgentURL serves f on a second listener, for clients with their
// own Config.
func newFakeAgentURL(t *testing.T, f *fakeAgent) (string, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL, srv
}

func TestErrors(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handle("GET /v1/job/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "job not found", http.StatusNotFound)
	})
	f.handle("GET /v1/node/a", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "prefix \"a\" matches 2 nodes: a1, a2", http.StatusBadRequest)
	})
	f.handle("GET /v1/job/badindex", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "nope")
		fmt.Fprint(w, `{}`)
	})
	f.handle("GET /v1/job/badjson", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"ID":`)
	})
	ctx := context.Background()

	_, _, err := c.Jobs().Info(ctx, "missing", nil)
	if got, want := fmt.Sprint(err), "Unexpected response code: 404 (job not found)"; got != want {
		t.Errorf("404 error = %q, want %q", got, want)
	}
	if got := StatusCode(fmt.Errorf("wrapped: %w", err)); got != 404 {
		t.Errorf("StatusCode(wrapped 404) = %d, want 404", got)
	}
	if !IsNotFound(err) {
		t.Errorf("IsNotFound(%v) = false, want true", err)
	}

	_, _, err = c.Nodes().Info(ctx, "a", nil)
	if StatusCode(err) != 400 || !strings.Contains(err.Error(), "matches 2 nodes") {
		t.Errorf("ambiguous prefix error = %v, want 400 naming the matches", err)
	}

	_, _, err = c.Jobs().Info(ctx, "badindex", nil)
	if err == nil || !strings.Contains(err.Error(), "X-Nomad-Index") || StatusCode(err) != 0 {
		t.Errorf("malformed header error = %v, want a non-status error naming X-Nomad-Index", err)
	}

	_, _, err = c.Jobs().Info(ctx, "badjson", nil)
	if err == nil || !strings.Contains(err.Error(), "decode") {
		t.Errorf("bad JSON error = %v, want a decode error", err)
	}

	if got := StatusCode(errors.New("plain")); got != 0 {
		t.Errorf("StatusCode(plain error) = %d, want 0", got)
	}

	dead, err := NewClient(&Config{Address: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dead.Status().Leader(ctx); err == nil || StatusCode(err) != 0 {
		t.Errorf("connection refused error = %v, want a transport error", err)
	}
}

func TestJobWrites(t *testing.T) {
	f, c := newFakeAgent(t)
	ctx := context.Background()
	f.handle("PUT /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "12")
		fmt.Fprint(w, `{"EvalID":"e1","EvalCreateIndex":12,"JobModifyIndex":12}`)
	})
	job := &structs.Job{ID: "train", Type: structs.JobTypeBatch, TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 2}}}
	resp, wm, err := c.Jobs().Register(ctx, job, &WriteOptions{Namespace: "ml"})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if resp.EvalID != "e1" || resp.JobModifyIndex != 12 || wm.LastIndex != 12 {
		t.Errorf("Register = %+v, meta %+v; want eval e1 at index 12", resp, wm)
	}
	var body struct{ Job *structs.Job }
	got := f.last(t)
	if err := json.Unmarshal([]byte(got.Body), &body); err != nil {
		t.Fatalf("register body %q: %v", got.Body, err)
	}
	if body.Job == nil || body.Job.ID != "train" || body.Job.TaskGroups[0].Count != 2 {
		t.Errorf("register body = %s, want {\"Job\": train with count 2}", got.Body)
	}
	if got.Query.Get("namespace") != "ml" {
		t.Errorf("register namespace = %q, want ml", got.Query.Get("namespace"))
	}

	f.handleJSON("DELETE /v1/job/a%2Fb", 13, &structs.JobDeregisterResponse{EvalID: "e2"})
	tests := []struct {
		purge     bool
		wantPurge string
	}{{false, ""}, {true, "true"}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("purge=%v", tt.purge), func(t *testing.T) {
			resp, _, err := c.Jobs().Deregister(ctx, "a/b", tt.purge, nil)
			if err != nil {
				t.Fatalf("Deregister: %v", err)
			}
			if resp.EvalID != "e2" {
				t.Errorf("EvalID = %q, want e2", resp.EvalID)
			}
			if got := f.last(t).Query.Get("purge"); got != tt.wantPurge {
				t.Errorf("purge param = %q, want %q", got, tt.wantPurge)
			}
		})
	}
}

func TestParseHCL(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handle("POST /v1/jobs/parse", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			JobHCL       string
			Canonicalize bool
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if strings.Contains(in.JobHCL, "{{") {
			http.Error(w, "job.hcl:1,5: Invalid block definition", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"ID":"from-hcl","Namespace":%q}`, map[bool]string{true: "default", false: ""}[in.Canonicalize])
	})
	job, err := c.Jobs().ParseHCL(context.Background(), `job "from-hcl" {}`, true)
	if err != nil {
		t.Fatalf("ParseHCL: %v", err)
	}
	if job.ID != "from-hcl" || job.Namespace != "default" {
		t.Errorf("job = %+v, want from-hcl canonicalized", job)
	}
	_, err = c.Jobs().ParseHCL(context.Background(), `job {{`, false)
	if StatusCode(err) != 400 || !strings.Contains(err.Error(), "job.hcl:1,5") {
		t.Errorf("ParseHCL(bad) error = %v, want 400 with position", err)
	}
}

func TestReadEndpointsDecode(t *testing.T) {
	f, c := newFakeAgent(t)
	ctx := context.Background()
	alloc := &structs.Allocation{
		ID: "a1", NodeID: "n1", JobID: "train", TaskGroup: "g", ClientStatus: "running",
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Devices: []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"GPU-1", "GPU-2"}}}},
		}},
		TaskStates: map[string]*structs.TaskState{"t": {State: "running", Events: []*structs.TaskEvent{{Type: "Started", Time: 5}}}},
	}
	node := &structs.Node{ID: "n1", Name: "gpu-1", NodeResources: &structs.NodeResources{Devices: []*structs.NodeDeviceResource{
		{Vendor: "nvidia", Type: "gpu", Name: "H100", Instances: []*structs.NodeDevice{{ID: "GPU-1", Healthy: true}}},
	}}}
	f.handleJSON("GET /v1/allocation/a1", 3, alloc)
	f.handleJSON("GET /v1/allocations", 3, []*structs.AllocListStub{alloc.Stub()})
	f.handleJSON("GET /v1/node/n1", 4, node)
	f.handleJSON("GET /v1/nodes", 4, []*structs.NodeListStub{node.Stub()})
	f.handleJSON("GET /v1/node/n1/allocations", 4, []*structs.Allocation{alloc})
	f.handleJSON("GET /v1/job/train/allocations", 5, []*structs.AllocListStub{alloc.Stub()})
	f.handleJSON("GET /v1/job/train/evaluations", 5, []*structs.Evaluation{{ID: "e1", BlockedEval: "e2"}})
	f.handleJSON("GET /v1/job/train/summary", 5, &structs.JobSummary{JobID: "train", Summary: map[string]structs.TaskGroupSummary{"g": {Running: 1, Queued: 2}}})
	f.handleJSON("GET /v1/evaluations", 6, []*structs.Evaluation{{ID: "e1"}})
	f.handleJSON("GET /v1/evaluation/e1/allocations", 6, []*structs.AllocListStub{alloc.Stub()})

	gotAlloc, meta, err := c.Allocations().Info(ctx, "a1", nil)
	if err != nil || meta.LastIndex != 3 {
		t.Fatalf("alloc Info: %v (meta %+v)", err, meta)
	}
	if got := gotAlloc.DeviceIDs(); strings.Join(got, ",") != "GPU-1,GPU-2" {
		t.Errorf("alloc GPUs = %v, want GPU-1,GPU-2", got)
	}
	if gotAlloc.TaskStates["t"].Events[0].Type != "Started" {
		t.Errorf("task events = %+v, want Started", gotAlloc.TaskStates["t"].Events)
	}
	stubs, _, err := c.Allocations().List(ctx, nil)
	if err != nil || len(stubs) != 1 || stubs[0].ID != "a1" {
		t.Errorf("alloc List = %v, %v; want [a1]", stubs, err)
	}
	gotNode, _, err := c.Nodes().Info(ctx, "n1", nil)
	if err != nil || len(gotNode.NodeResources.Devices[0].Instances) != 1 {
		t.Errorf("node Info = %+v, %v; want one GPU", gotNode, err)
	}
	nodes, _, err := c.Nodes().List(ctx, nil)
	if err != nil || len(nodes) != 1 || nodes[0].GPUs != 1 {
		t.Errorf("node List = %+v, %v; want one node with one GPU", nodes, err)
	}
	nallocs, _, err := c.Nodes().Allocations(ctx, "n1", nil)
	if err != nil || len(nallocs) != 1 {
		t.Errorf("node Allocations = %v, %v; want one", nallocs, err)
	}
	jallocs, _, err := c.Jobs().Allocations(ctx, "train", nil)
	if err != nil || len(jallocs) != 1 {
		t.Errorf("job Allocations = %v, %v; want one", jallocs, err)
	}
	evals, _, err := c.Jobs().Evaluations(ctx, "train", nil)
	if err != nil || len(evals) != 1 || evals[0].BlockedEval != "e2" {
		t.Errorf("job Evaluations = %v, %v; want e1 blocked by e2", evals, err)
	}
	sum, _, err := c.Jobs().Summary(ctx, "train", nil)
	if err != nil || sum.Summary["g"].Queued != 2 {
		t.Errorf("Summary = %+v, %v; want 2 queued", sum, err)
	}
	if ev, _, err := c.Evaluations().List(ctx, nil); err != nil || len(ev) != 1 {
		t.Errorf("eval List = %v, %v", ev, err)
	}
	if ea, _, err := c.Evaluations().Allocations(ctx, "e1", nil); err != nil || len(ea) != 1 {
		t.Errorf("eval Allocations = %v, %v", ea, err)
	}
}

func TestStatusAndAgent(t *testing.T) {
	f, c := newFakeAgent(t)
	ctx := context.Background()
	f.handleJSON("GET /v1/status/leader", 1, "127.0.0.1:4647")
	f.handleJSON("GET /v1/status/peers", 1, []string{"127.0.0.1:4647"})
	f.handleJSON("GET /v1/agent/self", 1, map[string]any{"config": map[string]any{"Region": "global"}, "member": map[string]any{"Name": "dev"}, "stats": map[string]any{}})
	if leader, err := c.Status().Leader(ctx); err != nil || leader != "127.0.0.1:4647" {
		t.Errorf("Leader = %q, %v", leader, err)
	}
	if peers, err := c.Status().Peers(ctx); err != nil || len(peers) != 1 {
		t.Errorf("Peers = %v, %v", peers, err)
	}
	self, err := c.Agent().Self(ctx)
	if err != nil || self.Config["Region"] != "global" || self.Member["Name"] != "dev" {
		t.Errorf("Self = %+v, %v", self, err)
	}
}

func TestPrefixList(t *testing.T) {
	f, c := newFakeAgent(t)
	f.handleJSON("GET /v1/jobs", 1, []*structs.JobListStub{{ID: "train"}})
	if _, _, err := c.Jobs().PrefixList(context.Background(), "tr"); err != nil {
		t.Fatal(err)
	}
	if got := f.last(t).Query.Get("prefix"); got != "tr" {
		t.Errorf("prefix = %q, want tr", got)
	}
}

func TestBlockingQueryCancelled(t *testing.T) {
	f, c := newFakeAgent(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.handle("GET /v1/evaluation/e1", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.Evaluations().Info(ctx, "e1", &QueryOptions{WaitIndex: 9, WaitTime: time.Minute})
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query did not return after cancel")
	}
}

// TestDefaultConfig_NomadEnvFallbacks: each NOMAD_ variable is read when
// its DROVER_ twin is unset, and the DROVER_ one wins.
func TestDefaultConfig_NomadEnvFallbacks(t *testing.T) {
	for _, name := range []string{EnvAddress, EnvRegion, EnvNamespace, EnvCACert, EnvClientCert, EnvClientKey, EnvTLSServerName, EnvSkipVerify, EnvToken} {
		t.Setenv(name, "")
	}
	t.Setenv("NOMAD_ADDR", "http://nomad:4646")
	t.Setenv("NOMAD_REGION", "eu")
	t.Setenv("NOMAD_NAMESPACE", "team")
	t.Setenv("NOMAD_TOKEN", "tok")
	t.Setenv("NOMAD_CACERT", "/ca.pem")
	t.Setenv("NOMAD_CLIENT_CERT", "/c.pem")
	t.Setenv("NOMAD_CLIENT_KEY", "/k.pem")
	t.Setenv("NOMAD_TLS_SERVER_NAME", "server.global.nomad")
	t.Setenv("NOMAD_SKIP_VERIFY", "true")
	cfg := DefaultConfig()
	want := TLSConfig{CACert: "/ca.pem", ClientCert: "/c.pem", ClientKey: "/k.pem", TLSServerName: "server.global.nomad", Insecure: true}
	if cfg.Address != "http://nomad:4646" || cfg.Region != "eu" || cfg.Namespace != "team" || cfg.SecretID != "tok" || *cfg.TLSConfig != want {
		t.Errorf("NOMAD_ only: got %+v %+v", cfg, cfg.TLSConfig)
	}
	t.Setenv(EnvRegion, "us")
	t.Setenv(EnvNamespace, "ours")
	if cfg := DefaultConfig(); cfg.Region != "us" || cfg.Namespace != "ours" {
		t.Errorf("DROVER_ set: got region %q namespace %q, want us and ours", cfg.Region, cfg.Namespace)
	}
}
