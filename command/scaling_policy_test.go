package command

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

const scalingJobHCL = `job "web" {
  datacenters = ["dc1"]
  group "frontend" {
    scaling {
      min = 1
      max = 3
      policy {
        cooldown = "1m"
      }
    }
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["30"]
      }
    }
  }
}`

// TestScalingPolicyCommands: a job with a group scaling block shows its
// policy in scaling policy list and info; an unknown ID exits 1.
func TestScalingPolicyCommands(t *testing.T) {
	addr := startDevAgent(t)
	expect := func(wantCode int, want string, args ...string) string {
		t.Helper()
		code, stdout, stderr := run(t, addr, args...)
		if code != wantCode || !strings.Contains(stdout+stderr, want) {
			t.Fatalf("drover %s: got exit %d, output %q %q; want exit %d with %q",
				strings.Join(args, " "), code, stdout, stderr, wantCode, want)
		}
		return stdout
	}
	expect(0, "No policies found", "scaling", "policy", "list")
	expect(0, "", "job", "run", "-detach", nsWriteFile(t, "web.hcl", scalingJobHCL))
	id := structs.ScalingPolicyID("default", "web", "frontend")
	expect(0, id, "scaling", "policy", "list", "-job", "web")
	expect(0, "No policies found", "scaling", "policy", "list", "-job", "other")
	info := expect(0, "Target  = Group:frontend,Job:web,Namespace:default", "scaling", "policy", "info", id)
	for _, want := range []string{"Min     = 1", "Max     = 3", `"cooldown": "1m"`} {
		if !strings.Contains(info, want) {
			t.Errorf("policy info lacks %q:\n%s", want, info)
		}
	}
	expect(1, "Error reading scaling policy", "scaling", "policy", "info", "nope")
}
