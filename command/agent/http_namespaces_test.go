package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestNamespaceAndQuotaRoutes drives /v1/namespace(s) and /v1/quota(s)
// on a dev agent: writes, reads, usage, and a 4xx with a message for
// every bad request.
func TestNamespaceAndQuotaRoutes(t *testing.T) {
	_, base := newTestAgent(t)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	steps := []struct {
		name, method, path, body string
		want                     int
		wantBody                 string // a substring of the answer
	}{
		{"quota", "PUT", "/v1/quota/team-a-gpus", `{"Limits": [{"Region": "global", "RegionLimit": {"GPUs": 1, "GPUMemoryMB": 163840}}]}`, 200, `"Index"`},
		{"namespace", "POST", "/v1/namespace/team-a", `{"Description": "Team A", "Quota": "team-a-gpus"}`, 200, `"Index"`},
		{"list namespaces", "GET", "/v1/namespaces", "", 200, `"Name":"team-a"`},
		{"read namespace", "GET", "/v1/namespace/team-a", "", 200, `"Quota":"team-a-gpus"`},
		{"read default namespace", "GET", "/v1/namespace/default", "", 200, `"Name":"default"`},
		{"list quotas", "GET", "/v1/quotas", "", 200, `"GPUs":1`},
		{"read quota", "GET", "/v1/quota/team-a-gpus", "", 200, `"Region":"global"`},
		{"job in team-a", "PUT", "/v1/jobs?namespace=team-a", gpuJobJSON("train", 1), 200, `"EvalID"`},

		{"unknown namespace", "GET", "/v1/namespace/nope", "", 404, `namespace "nope" not found`},
		{"unknown quota", "GET", "/v1/quota/nope", "", 404, `quota "nope" not found`},
		{"usage of an unknown quota", "GET", "/v1/quota/usage/nope", "", 404, `not found`},
		{"malformed quota", "PUT", "/v1/quota/q", `{"Limits": [`, 400, "not valid JSON"},
		{"quota without limits", "PUT", "/v1/quota/q", `{}`, 400, "no limit"},
		{"quota with a nil limit", "PUT", "/v1/quota/q", `{"Limits": [null]}`, 400, "missing"},
		{"quota name mismatch", "PUT", "/v1/quota/q", `{"Name": "r", "Limits": [{"Region": "global", "RegionLimit": {}}]}`, 400, "does not match"},
		{"bad namespace name", "PUT", "/v1/namespace/no%20spaces", `{}`, 400, "letters, digits or dashes"},
		{"namespace with an unknown quota", "PUT", "/v1/namespace/b", `{"Quota": "nope"}`, 400, `quota "nope" does not exist`},
		{"delete default", "DELETE", "/v1/namespace/default", "", 400, "cannot be deleted"},
		{"delete namespace with jobs", "DELETE", "/v1/namespace/team-a", "", 400, "has jobs"},
		{"delete unknown namespace", "DELETE", "/v1/namespace/nope", "", 404, "not found"},
		{"delete quota in use", "DELETE", "/v1/quota/team-a-gpus", "", 400, "used by a namespace"},
		{"job in an unknown namespace", "PUT", "/v1/jobs?namespace=nope", gpuJobJSON("lost", 1), 400, `namespace "nope" does not exist`},
	}
	for _, st := range steps {
		code, body := do(st.method, st.path, st.body)
		if code != st.want || !strings.Contains(body, st.wantBody) {
			t.Errorf("%s: got %d %q, want %d with %q", st.name, code, strings.TrimSpace(body), st.want, st.wantBody)
		}
	}

	_, body := do("GET", "/v1/quota/usage/team-a-gpus", "")
	var usage struct {
		Usage  struct{ Namespaces []string }
		Region string
		Limit  struct{ GPUs int }
	}
	if err := json.Unmarshal([]byte(body), &usage); err != nil {
		t.Fatalf("usage: %v: %s", err, body)
	}
	if usage.Region != "global" || usage.Limit.GPUs != 1 || len(usage.Usage.Namespaces) != 1 || usage.Usage.Namespaces[0] != "team-a" {
		t.Errorf("usage = %s, want team-a under a 1-GPU limit in global", body)
	}
}
