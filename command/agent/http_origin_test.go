package agent

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestCrossOriginRefused: a browser page of another origin can neither
// write (stop, restart, signal, register) nor open an exec session, and
// nothing reaches the servers when it tries; tools and the UI itself can.
func TestCrossOriginRefused(t *testing.T) {
	b := &recordingBackend{}
	h := newHTTPAPI(b, hclog.NewNullLogger())
	exec := "/v1/client/allocation/abc/exec?task=t&command=%5B%22sh%22%5D"
	upgrade := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	tests := []struct {
		name, method, path, origin string
		headers                    map[string]string
		want                       int
		reachesServer              bool
	}{
		{"foreign write", "POST", "/v1/client/allocation/abc/restart", "http://evil.example", nil, http.StatusForbidden, false},
		{"foreign stop", "PUT", "/v1/allocation/abc/stop", "https://evil.example:4646", nil, http.StatusForbidden, false},
		{"null origin", "PUT", "/v1/allocation/abc/stop", "null", nil, http.StatusForbidden, false},
		{"same origin write", "PUT", "/v1/allocation/abc/stop", "http://127.0.0.1:4646", map[string]string{"Host": "127.0.0.1:4646"}, http.StatusNotFound, true},
		{"localhost write", "PUT", "/v1/allocation/abc/stop", "http://localhost:4646", map[string]string{"Host": "localhost:4646"}, http.StatusNotFound, true},
		// DNS rebinding: a page of a name that now resolves to the agent
		// is same-origin by every header; with ACLs off it may not act.
		{"rebound name write", "PUT", "/v1/allocation/abc/stop", "http://evil.example:4646", map[string]string{"Host": "evil.example:4646"}, http.StatusForbidden, false},
		{"cross-site fetch metadata", "PUT", "/v1/allocation/abc/stop", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, false},
		{"tool write", "PUT", "/v1/allocation/abc/stop", "", nil, http.StatusNotFound, true},
		{"foreign read", "GET", "/v1/jobs", "http://evil.example", nil, http.StatusNotFound, true},
		{"foreign exec", "GET", exec, "http://evil.example", upgrade, http.StatusForbidden, false},
		{"exec without upgrade", "GET", exec, "", nil, http.StatusBadRequest, false},
		// A form or text/plain post is what a page of another site can
		// send without asking first; with ACLs off too it must carry a
		// token header, which such a page cannot add.
		{"browser text/plain write", "POST", "/v1/jobs", "http://127.0.0.1:4646", map[string]string{"Host": "127.0.0.1:4646", "Content-Type": "text/plain"}, http.StatusForbidden, false},
		{"browser form write", "PUT", "/v1/allocation/abc/stop", "", map[string]string{"Host": "127.0.0.1:4646", "Sec-Fetch-Site": "same-origin", "Content-Type": "application/x-www-form-urlencoded"}, http.StatusForbidden, false},
		{"browser multipart write", "POST", "/v1/jobs", "http://127.0.0.1:4646", map[string]string{"Host": "127.0.0.1:4646", "Content-Type": "multipart/form-data; boundary=x"}, http.StatusForbidden, false},
		{"browser text/plain write with a token", "PUT", "/v1/allocation/abc/stop", "http://127.0.0.1:4646", map[string]string{"Host": "127.0.0.1:4646", "Content-Type": "text/plain", "X-Nomad-Token": "t"}, http.StatusNotFound, true},
		{"curl form write", "PUT", "/v1/allocation/abc/stop", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusNotFound, true},
		{"json write", "PUT", "/v1/allocation/abc/stop", "", map[string]string{"Content-Type": "application/json"}, http.StatusNotFound, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(""))
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			if host := tt.headers["Host"]; host != "" {
				req.Host = host
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			calls := b.take()
			if rec.Code != tt.want {
				t.Errorf("got %d %q, want %d", rec.Code, rec.Body.String(), tt.want)
			}
			for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"} {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if got := len(calls) > 0; got != tt.reachesServer {
				t.Errorf("reached the servers: %v (%v), want %v", got, calls, tt.reachesServer)
			}
		})
	}
}
