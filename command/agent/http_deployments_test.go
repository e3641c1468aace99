package agent

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestVersionAndDeploymentRoutes drives the job versions' and
// deployments' routes on a dev agent: Nomad's shapes, and a 4xx with a
// message for every bad request.
func TestVersionAndDeploymentRoutes(t *testing.T) {
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
	v0 := gpuJobJSON("train", 1)
	v1 := strings.Replace(v0, `"Count": 1,`, `"Count": 2,`, 1)
	steps := []struct {
		name, method, path, body string
		want                     int
		wantBody                 string
	}{
		{"register v0", "PUT", "/v1/jobs", v0, 200, `"EvalID"`},
		{"register v1", "PUT", "/v1/jobs", v1, 200, `"EvalID"`},
		{"versions", "GET", "/v1/job/train/versions?diffs=true", "", 200, `"Name":"TaskGroups[\"g\"].Count","Old":"1","New":"2"`},
		{"one version", "GET", "/v1/job/train?version=0", "", 200, `"Version":0`},
		{"stable", "PUT", "/v1/job/train/stable", `{"JobVersion": 0, "Stable": true}`, 200, `"JobModifyIndex"`},
		{"stable shows", "GET", "/v1/job/train?version=0", "", 200, `"Stable":true`},
		{"revert", "PUT", "/v1/job/train/revert", `{"JobID": "train", "JobVersion": 0}`, 200, `"EvalID"`},
		{"reverted", "GET", "/v1/job/train", "", 200, `"Version":2`},
		{"no deployments of a batch job", "GET", "/v1/job/train/deployments", "", 200, `[]`},
		{"no latest deployment", "GET", "/v1/job/train/deployment", "", 200, `null`},
		{"deployments", "GET", "/v1/deployments", "", 200, `[]`},

		{"versions of an unknown job", "GET", "/v1/job/nope/versions", "", 404, `job "nope" not found`},
		{"bad diffs", "GET", "/v1/job/train/versions?diffs=maybe", "", 400, "not a boolean"},
		{"bad version", "GET", "/v1/job/train?version=x", "", 400, "not a number"},
		{"unknown version", "GET", "/v1/job/train?version=9", "", 404, "no version 9"},
		{"revert to current", "PUT", "/v1/job/train/revert", `{"JobVersion": 2}`, 400, "can't revert to current version"},
		{"revert enforcing", "PUT", "/v1/job/train/revert", `{"JobVersion": 0, "EnforcePriorVersion": 1}`, 409, "enforcing version 1"},
		{"revert id mismatch", "PUT", "/v1/job/train/revert", `{"JobID": "x", "JobVersion": 0}`, 400, "does not match"},
		{"stable unknown version", "PUT", "/v1/job/train/stable", `{"JobVersion": 9, "Stable": true}`, 404, "no version 9"},
		{"malformed stable", "PUT", "/v1/job/train/stable", `{"JobVersion": "x"}`, 400, ""},
		{"unknown deployment", "GET", "/v1/deployment/ffffffff", "", 404, "not found"},
		{"allocations of an unknown deployment", "GET", "/v1/deployment/allocations/ffffffff", "", 404, "not found"},
		{"promote unknown", "PUT", "/v1/deployment/promote/ffffffff", `{"All": true}`, 404, "not found"},
		{"promote without body", "PUT", "/v1/deployment/promote/ffffffff", ``, 400, ""},
		{"fail unknown", "PUT", "/v1/deployment/fail/ffffffff", ``, 404, "not found"},
		{"pause id mismatch", "PUT", "/v1/deployment/pause/ffffffff", `{"DeploymentID": "other", "Pause": true}`, 400, "does not match"},
	}
	for _, st := range steps {
		code, body := do(st.method, st.path, st.body)
		if code != st.want || !strings.Contains(body, st.wantBody) {
			t.Errorf("%s: got %d %q, want %d with %q", st.name, code, strings.TrimSpace(body), st.want, st.wantBody)
		}
	}
}
