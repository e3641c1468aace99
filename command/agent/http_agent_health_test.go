package agent

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	hclog "github.com/hashicorp/go-hclog"
)

// selfBackend is a backend whose agent description is self.
type selfBackend struct {
	recordingBackend
	self map[string]any
}

func (b *selfBackend) Self() map[string]any { return b.self }

// TestAgentHealth: 200 while the server knows a leader and the client a
// server; 500 with the same body, naming what is missing, otherwise.
func TestAgentHealth(t *testing.T) {
	for _, tt := range []struct {
		name          string
		leader, known string
		code          int
		want          string
	}{
		{"healthy", "127.0.0.1:4647", "127.0.0.1:4647", 200, `{"client":{"ok":true,"message":"ok"},"server":{"ok":true,"message":"ok"}}`},
		{"no leader", "", "127.0.0.1:4647", 500, `"server":{"ok":false,"message":"No cluster leader"}`},
		{"no servers", "127.0.0.1:4647", "", 500, `"client":{"ok":false,"message":"No known servers"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &selfBackend{self: map[string]any{"stats": map[string]map[string]string{
				"nomad": {"leader_addr": tt.leader}, "client": {"known_servers": tt.known},
			}}}
			rec := httptest.NewRecorder()
			newHTTPAPI(b, hclog.NewNullLogger()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/agent/health", nil))
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.want) || rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("got %d %q, want %d with %s", rec.Code, rec.Body.String(), tt.code, tt.want)
			}
		})
	}
}
