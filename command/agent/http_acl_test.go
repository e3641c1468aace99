package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// publicRoutes answer without a token, as Nomad's do: who leads, the
// regions, and the one-time bootstrap.
var publicRoutes = map[string]bool{
	"GET /v1/status/leader":  true,
	"GET /v1/status/peers":   true,
	"GET /v1/regions":        true,
	"POST /v1/acl/bootstrap": true,
	"PUT /v1/acl/bootstrap":  true,
	"GET /v1/agent/health":   true, // as in Nomad: whether the agent works, for load balancers
}

// ownRoutes are left out of the walk: exec is a websocket (its client
// operation is checked at the server: TestACL_ClientOpsCheckTheToken).
var ownRoutes = map[string]bool{
	"GET /v1/client/allocation/{id}/exec": true,
	// A stream that does not end: TestEventStream_HTTPNeedsAToken.
	"GET /v1/event/stream": true,
}

// filteredRoutes answer a token for another namespace with what it may
// see (lists filtered by namespace, the token's own policies and
// itself) rather than a refusal.
var filteredRoutes = map[string]bool{
	"GET /v1/namespaces":     true,
	"GET /v1/queues":         true,
	"GET /v1/queue/{name}":   true,
	"GET /v1/acl/policies":   true,
	"GET /v1/acl/token/self": true,
	"PUT /v1/search":         true, // namespaces the token may read
	"POST /v1/search":        true,
	"PUT /v1/search/fuzzy":   true,
	"POST /v1/search/fuzzy":  true,
}

// newACLAgent starts an in-process dev agent with ACLs on, bootstrapped;
// it returns the agent's base URL and the management secret.
func newACLAgent(t *testing.T) (*Agent, string, string) {
	t.Helper()
	cfg := DevConfig()
	cfg.Ports = &PortsConfig{HTTP: 0, RPC: 0, Serf: 0}
	cfg.DataDir = t.TempDir()
	cfg.LogLevel = "WARN"
	cfg.DevGPUs = 1
	cfg.ACL = &ACLConfig{Enabled: true}
	a, err := NewAgent(cfg, io.Discard)
	if err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown() })
	base := "http://" + a.HTTPAddr()
	var token structs.ACLToken
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := send(t, http.MethodPost, base+"/v1/acl/bootstrap", "", "")
		if code == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &token); err != nil || token.SecretID == "" {
				t.Fatalf("bootstrap answer %q: %v", body, err)
			}
			return a, base, token.SecretID
		}
		if time.Now().After(deadline) {
			t.Fatalf("bootstrap: %d %q after 15s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func send(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEveryRouteNeedsAToken walks every /v1 route of an agent with ACLs
// on: without a token each is refused with Nomad's one-line 403 (the
// public few aside); with a token for another namespace the namespace's
// routes are refused too; with the management token none is refused.
func TestEveryRouteNeedsAToken(t *testing.T) {
	a, base, mgmt := newACLAgent(t)
	nsOnly := createToken(t, base, mgmt, "elsewhere", `namespace "elsewhere" { policy = "write" }`)

	// A job of the default namespace, so that routes by allocation and
	// evaluation ID name real objects of a namespace the second token
	// may not touch.
	job := `{"Job": {"ID": "abc", "Name": "abc", "Type": "batch", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["60"]}}]}]}}`
	if code, got := send(t, http.MethodPut, base+"/v1/jobs", mgmt, job); code != http.StatusOK {
		t.Fatalf("register: %d %q", code, got)
	}
	var allocs []structs.AllocListStub
	for deadline := time.Now().Add(15 * time.Second); len(allocs) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the job was not placed in 15s")
		}
		_, got := send(t, http.MethodGet, base+"/v1/job/abc/allocations", mgmt, "")
		_ = json.Unmarshal([]byte(got), &allocs)
	}
	h := newHTTPAPI(a, nil)
	fill := strings.NewReplacer("{id}", "abc", "{alloc}", allocs[0].ID, "{name}", "abc", "{accessor}", "abc", "{$}", "")
	byID := strings.NewReplacer("/allocation/abc", "/allocation/"+allocs[0].ID, "/evaluation/abc", "/evaluation/"+allocs[0].EvalID)
	// Routes that take a job refuse members of other requests' bodies
	// (jobspec.DecodeJSONBody), so they get the job alone.
	jobBody := `{"Job": {"ID": "abc", "Name": "abc", "Type": "batch", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`
	takesJob := map[string]bool{"/v1/jobs": true, "/v1/job/{id}": true, "/v1/job/{id}/plan": true, "/v1/validate/job": true}
	anyBody := `{"Job": {"ID": "abc", "Name": "abc", "Type": "batch", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]},
	  "Count": 1, "Target": {"Group": "g"}, "Name": "abc", "Signal": "SIGHUP", "Healthy": true, "JobHCL": "job \"x\" {}",
	  "Limits": [{"Region": "global", "RegionLimit": {"GPU": 1}}], "Key": "T9jncgl9mbLus+baTTa7q7nPSUrXwbDi2dhbtqir37s="}`
	walked := 0
	for _, pattern := range h.mux.patterns {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok || !strings.HasPrefix(path, "/v1/") || path == "/v1/" || publicRoutes[pattern] || ownRoutes[pattern] {
			continue
		}
		walked++
		body := anyBody
		if takesJob[path] && method != http.MethodGet && method != http.MethodDelete {
			body = jobBody
		}
		url := base + byID.Replace(fill.Replace(path)) + "?path=/&node=x&task=t&node_id=n1&namespace=default"
		switch {
		case strings.HasSuffix(path, "/join"):
			url += "&address=127.0.0.1:1"
		case strings.HasSuffix(path, "/peer"):
			url += "&id=x"
		}
		if code, got := send(t, method, url, "", body); code != http.StatusForbidden || strings.Count(got, "\n") != 1 {
			t.Errorf("%s without a token: %d %q, want a one-line 403", pattern, code, got)
		}
		if code, got := send(t, method, url, nsOnly, body); code != http.StatusForbidden && !filteredRoutes[pattern] {
			t.Errorf("%s with a token for another namespace: %d %q, want 403", pattern, code, got)
		}
		if code, got := send(t, method, url, mgmt, body); code == http.StatusForbidden || code >= 500 && code != http.StatusServiceUnavailable && code != http.StatusBadGateway {
			t.Errorf("%s with the management token: %d %q", pattern, code, got)
		}
	}
	if walked < 50 {
		t.Errorf("walked %d routes, want them all (at least 50)", walked)
	}
}

// createToken applies a policy and returns the secret of a client token
// holding it.
func createToken(t *testing.T, base, mgmt, name, rules string) string {
	t.Helper()
	p, _ := json.Marshal(structs.ACLPolicy{Name: name, Rules: rules})
	if code, got := send(t, http.MethodPost, base+"/v1/acl/policy/"+name, mgmt, string(p)); code != http.StatusOK {
		t.Fatalf("apply policy: %d %q", code, got)
	}
	tok, _ := json.Marshal(structs.ACLToken{Name: name, Policies: []string{name}})
	code, got := send(t, http.MethodPost, base+"/v1/acl/token", mgmt, string(tok))
	var out structs.ACLToken
	if code != http.StatusOK || json.Unmarshal([]byte(got), &out) != nil || out.SecretID == "" {
		t.Fatalf("create token: %d %q", code, got)
	}
	return out.SecretID
}
