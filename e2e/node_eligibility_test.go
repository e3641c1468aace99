package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestE2E_NodeEligibilityCLI: `drover node eligibility -disable` keeps
// a new job off the node (its evaluation blocks) and `-enable` lets it
// place.
func TestE2E_NodeEligibilityCLI(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-elig", ports, 0))
	var nodes []struct{ ID, SchedulingEligibility string }
	waitFor(t, 30*time.Second, "the node", func() bool {
		_, body := a.do("GET", "/v1/nodes", "")
		return json.Unmarshal([]byte(body), &nodes) == nil && len(nodes) == 1
	})
	if r := a.drover("node", "eligibility", "-disable", nodes[0].ID[:8]); r.code != 0 || !strings.Contains(r.stdout, "ineligible") {
		t.Fatalf("disable: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := a.drover("job", "run", "-detach", writeFile(t, dir, "e.hcl", shJob("elig", "service", "sleep 300", ""))); r.code != 0 {
		t.Fatalf("job run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	running := func() bool {
		var allocs []allocStub
		a.getJSON("/v1/job/elig/allocations", &allocs)
		return len(allocs) == 1 && allocs[0].ClientStatus == "running"
	}
	waitFor(t, 30*time.Second, "the job's evaluation to block", func() bool {
		var evals []struct{ Status string }
		a.getJSON("/v1/job/elig/evaluations", &evals)
		for _, e := range evals {
			if e.Status == "blocked" {
				return true
			}
		}
		return false
	})
	if running() {
		t.Fatal("placed on an ineligible node")
	}
	if r := a.drover("node", "eligibility", "-enable", nodes[0].ID[:8]); r.code != 0 {
		t.Fatalf("enable: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 30*time.Second, "the job running once the node is eligible", running)
}
