package agent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// recordingBackend records the endpoints the HTTP layer calls and
// answers each with "not found".
type recordingBackend struct {
	mu    sync.Mutex
	calls []string
}

func (b *recordingBackend) record(method string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, method)
	return structs.ErrNotFound
}

func (b *recordingBackend) RPC(_ context.Context, method string, _, _ any) error {
	return b.record(method)
}

func (b *recordingBackend) StreamCall(_ context.Context, method, _ string, _ any) (net.Conn, error) {
	return nil, b.record(method)
}
func (b *recordingBackend) LocalNodeID() string  { return "node-1" }
func (b *recordingBackend) Self() map[string]any { return map[string]any{} }

func (b *recordingBackend) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.calls
	b.calls = nil
	return out
}

// agentLocal are the routes answered by the agent itself, as Nomad's
// are: its own description, its serf pool, and the web UI.
var agentLocal = map[string]bool{
	"GET /v1/agent/self":            true,
	"GET /v1/agent/members":         true,
	"GET /v1/agent/servers":         true, // the servers its client knows
	"GET /v1/agent/health":          true, // whether it knows a leader and a server
	"PUT /v1/agent/join":            true,
	"POST /v1/agent/join":           true,
	"PUT /v1/agent/force-leave":     true,
	"POST /v1/agent/force-leave":    true,
	"PUT /v1/jobs/parse":            true, // parses HCL, reads nothing
	"POST /v1/jobs/parse":           true,
	"GET /v1/metrics":               true, // the agent's own metrics
	"GET /v1/agent/monitor":         true, // the agent's own log
	"GET /v1/agent/pprof/{profile}": true, // the agent's own profiles
}

// TestEveryRouteGoesThroughAnEndpoint: every /v1 route but the agent's
// own either calls a server endpoint or a routed client operation, or
// refuses the request's input before it would; none answers from
// anywhere else. The backend the HTTP layer gets has no other door: it
// offers RPC, streaming calls, and the agent's own node ID and
// description (and command/agent may not import server/state:
// TestDependencyDirection).
func TestEveryRouteGoesThroughAnEndpoint(t *testing.T) {
	var methods []string
	bt := reflect.TypeFor[backend]()
	for i := range bt.NumMethod() {
		methods = append(methods, bt.Method(i).Name)
	}
	if got := strings.Join(methods, ","); got != "LocalNodeID,RPC,Self,StreamCall" {
		t.Fatalf("backend methods = %s: the HTTP layer must reach the cluster only through RPC and StreamCall", got)
	}

	b := &recordingBackend{}
	h := newHTTPAPI(b, hclog.NewNullLogger())
	fill := strings.NewReplacer("{id}", "abc", "{alloc}", "abc", "{name}", "abc", "{$}", "")
	bodies := []string{`{"Job": {"ID": "abc", "Name": "abc", "Type": "batch", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}, "Count": 1, "Target": {"Group": "g"}, "Signal": "SIGHUP", "Name": "abc", "Healthy": true}`}
	apiRoutes := 0
	for _, pattern := range h.mux.patterns {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok || !strings.HasPrefix(path, "/v1/") || agentLocal[pattern] {
			continue
		}
		apiRoutes++
		url := fill.Replace(path) + "?path=/&address=127.0.0.1:1&id=x&task=t&node_id=n1"
		if strings.Contains(path, "snapshot") && method != http.MethodGet {
			bodies = append(bodies[:1:1], "archive")
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, url, strings.NewReader(bodies[len(bodies)-1]))
		h.ServeHTTP(rec, req)
		calls := b.take()
		if len(calls) == 0 && rec.Code != http.StatusBadRequest {
			t.Errorf("%s: answered %d %q without calling a server endpoint", pattern, rec.Code, strings.TrimSpace(rec.Body.String()))
		}
		if rec.Code >= 500 {
			t.Errorf("%s: %d %q", pattern, rec.Code, rec.Body.String())
		}
	}
	if apiRoutes < 40 {
		t.Errorf("walked %d API routes, want them all (at least 40)", apiRoutes)
	}
}
