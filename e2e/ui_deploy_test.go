package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestE2E_UIDeployment: the job page shows a service job's canary
// deployment waiting for promotion, and its Promote button completes
// the rollout.
func TestE2E_UIDeployment(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-uid", ports, 0))
	v0 := shJob("web", "service", "sleep 300", canaryUpdate)
	if r := a.drover("job", "run", writeFile(t, dir, "v0.hcl", v0)); r.code != 0 {
		t.Fatalf("job run v0: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	a.waitDeployment("web", 0, "successful")
	v1 := strings.Replace(v0, "sleep 300", "sleep 301", 1)
	if r := a.drover("job", "run", "-detach", writeFile(t, dir, "v1.hcl", v1)); r.code != 0 {
		t.Fatalf("job run v1: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	a.waitDeployment("web", 1, "running")

	b := newBrowser(t, a.addr)
	b.open("/jobs/web")
	b.waitText(`[data-testid="deployment"]`, 30*time.Second, func(s string) bool {
		return strings.Contains(s, "running") && strings.Contains(s, "version 1") && strings.Contains(s, "Promote")
	})
	// Promotion needs the canary healthy.
	waitFor(t, 30*time.Second, "the canary healthy", func() bool {
		d := a.latestDeployment("web")
		return d != nil && d.TaskGroups["g"].HealthyAllocs == 1
	})
	b.do("promote", chromedp.Click(chromedp.CSS(`[data-testid="promote-button"]`)))
	a.waitDeployment("web", 1, "successful")
	b.waitText(`[data-testid="deployment"]`, 30*time.Second, func(s string) bool {
		return strings.Contains(s, "successful") && !strings.Contains(s, "Promote")
	})
	b.checkClean()
}
