package command

import (
	"strings"
	"testing"
)

// TestNodeEligibilityUsage: exactly one of -enable and -disable, and one
// node (the command itself runs against an agent in
// e2e.TestE2E_NodeEligibilityCLI).
func TestNodeEligibilityUsage(t *testing.T) {
	for _, args := range [][]string{{"abc"}, {"-enable", "-disable", "abc"}, {"-enable"}, {"-disable", "a", "b"}} {
		_, addr := newFakeAgent(t)
		code, stdout, stderr := run(t, addr, append([]string{"node", "eligibility"}, args...)...)
		if code != 1 || !strings.Contains(stdout+stderr, "node eligibility") {
			t.Errorf("%v: exit %d, output %q; want a usage error", args, code, stdout+stderr)
		}
	}
}
