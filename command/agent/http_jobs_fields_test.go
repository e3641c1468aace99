package agent

import (
	"net/http"
	"strings"
	"testing"
)

// TestJobBodiesRefuseUnknownFields: the routes that take a job check its
// members the way job files are checked (jobspec.DecodeJSONBody): Nomad
// fields Drover lacks pass empty and are a 400 naming them when set; a
// name that is nobody's field is a 400 naming it.
func TestJobBodiesRefuseUnknownFields(t *testing.T) {
	_, base := newTestAgent(t)
	job := func(extra string) string {
		return `{"Job": {"ID": "f", "Type": "batch", "Datacenters": ["dc1"]` + extra + `,
  "TaskGroups": [{"Name": "g", "Count": 1, "Scaling": null, "Services": null, "EphemeralDisk": {"Sticky": false, "Migrate": false, "SizeMB": 300},
    "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}, "Vault": null, "Templates": null}]}]}}`
	}
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		want                     string
	}{
		{"Nomad nulls", "PUT", "/v1/jobs", job(`, "Multiregion": null, "Periodic": null, "ConsulToken": "", "Stop": false`), http.StatusOK, `"EvalID"`},
		{"periodic set waits for its cron", "PUT", "/v1/jobs", job(`, "Periodic": {"Spec": "* * * * *"}`), http.StatusOK, `"EvalID":""`},
		{"multiregion set", "PUT", "/v1/jobs", job(`, "Multiregion": {"Regions": [{"Name": "west"}]}`), http.StatusBadRequest, `Nomad's field "Multiregion" is not supported by Drover yet`},
		{"typo", "PUT", "/v1/job/f", job(`, "Prioirty": 50`), http.StatusBadRequest, `Job has no field "Prioirty"`},
		{"typo in a plan", "POST", "/v1/job/f/plan", job(`, "Datacentres": ["dc1"]`), http.StatusBadRequest, `"Datacentres"`},
		{"plan diff", "POST", "/v1/job/f/plan", strings.TrimSuffix(job(""), "}") + `, "Diff": true}`, http.StatusOK, `"Annotations"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got := send(t, tt.method, base+tt.path, "", tt.body)
			if code != tt.wantCode || !strings.Contains(got, tt.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("got %d %q, want %d with %q on one line", code, got, tt.wantCode, tt.want)
			}
		})
	}
}
