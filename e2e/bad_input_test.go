package e2e

import (
	"strings"
	"testing"
)

// TestE2E_BadInput: bad input never crashes anything and is answered with a
// clear error that names the place.
func TestE2E_BadInput(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-bad", ports, 1))

	bad := writeFile(t, dir, "bad.hcl", "job \"x\" {\n  type = \"batch\"\n  group \"g\" {\n    count = \n  }\n}\n")
	for _, verb := range []string{"run", "validate"} {
		r := a.drover("job", verb, bad)
		if r.code != 1 {
			t.Errorf("job %s bad.hcl: exit %d, want 1", verb, r.code)
		}
		if !strings.Contains(r.stderr+r.stdout, "bad.hcl:4,") && !strings.Contains(r.stderr+r.stdout, "bad.hcl:5,") {
			t.Errorf("job %s bad.hcl: output does not carry file:line,col:\n%s%s", verb, r.stdout, r.stderr)
		}
	}

	tests := []struct {
		name, method, path, body string
		wantCode                 int
		wantIn                   string
	}{
		{"malformed JSON", "PUT", "/v1/jobs", `{"Job": {"ID": `, 400, "JSON"},
		{"no job", "PUT", "/v1/jobs", `{}`, 400, "Job"},
		{"invalid job", "PUT", "/v1/jobs", `{"Job": {"ID": "x", "Datacenters": ["dc1"]}}`, 400, "group"},
		{"unknown job", "GET", "/v1/job/no-such-job", "", 404, "not found"},
		{"unknown job delete", "DELETE", "/v1/job/no-such-job", "", 404, "not found"},
		{"unknown allocation", "GET", "/v1/allocation/ffffffff-0000-0000-0000-000000000000", "", 404, "not found"},
		{"unknown evaluation", "GET", "/v1/evaluation/ffffffff", "", 404, "not found"},
		{"unknown node", "GET", "/v1/node/ffffffff", "", 404, "not found"},
		{"bad index", "GET", "/v1/jobs?index=abc", "", 400, "index"},
		{"unknown route", "GET", "/v1/nope", "", 404, "no such API"},
		{"bad HCL parse", "POST", "/v1/jobs/parse", `{"JobHCL": "job \"x\" {"}`, 400, "input.hcl:1,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := a.do(tt.method, tt.path, tt.body)
			if code != tt.wantCode {
				t.Errorf("%s %s: got status %d, want %d (body %q)", tt.method, tt.path, code, tt.wantCode, body)
			}
			if !strings.Contains(body, tt.wantIn) {
				t.Errorf("%s %s: body %q does not contain %q", tt.method, tt.path, body, tt.wantIn)
			}
		})
	}
	// The agent is still alive and answering.
	var leader string
	if code := a.getJSON("/v1/status/leader", &leader); code != 200 || leader == "" {
		t.Fatalf("after bad input: leader status %d %q", code, leader)
	}
}
