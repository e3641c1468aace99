package acl

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestGolden parses each testdata/*.hcl policy, compiles it, and compares
// the parsed rules and a table of decisions with testdata/*.golden.
// Rewrite the golden files with -update and review the diff.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.hcl")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Parse(filepath.Base(in), string(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := renderPolicy(p) + "\n" + renderDecisions(New(false, []*Policy{p}))
			goldenPath := strings.TrimSuffix(in, ".hcl") + ".golden"
			if *update {
				if err := os.WriteFile(goldenPath, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs; got:\n%s", goldenPath, got)
			}
		})
	}
}

func renderPolicy(p *Policy) string {
	var b strings.Builder
	b.WriteString("# parsed\n")
	for _, r := range p.Namespaces {
		fmt.Fprintf(&b, "namespace %q policy=%q capabilities=%q\n", r.Name, r.Policy, r.Capabilities)
		for _, v := range r.Variables {
			fmt.Fprintf(&b, "  variables path %q capabilities=%q\n", v.PathSpec, v.Capabilities)
		}
	}
	for _, r := range p.Queues {
		fmt.Fprintf(&b, "queue %q policy=%q\n", r.Name, r.Policy)
	}
	fmt.Fprintf(&b, "node=%q agent=%q operator=%q quota=%q\n", p.Node, p.Agent, p.Operator, p.Quota)
	return b.String()
}

// goldenNamespaces and goldenQueues are the names the decision table
// asks about.
var (
	goldenNamespaces = []string{"*", "default", "ml-team", "ml-restricted", "prod", "prod-api", "prod-secrets", "staging"}
	goldenQueues     = []string{"default", "gpu-a100", "gpu-reserved", "cpu"}
	goldenVariables  = [][2]string{{"default", "nomad/jobs/web"}, {"ml-team", "ml/model"}, {"ml-team", "ml/secret/key"},
		{"ml-team", "shared/creds"}, {"ml-team", "other"}, {"ml-restricted", "ml/model"}, {"prod", "app"}, {"prod-secrets", "app"}}
)

func renderDecisions(a *ACL) string {
	var b strings.Builder
	b.WriteString("# decisions\n")
	for _, ns := range goldenNamespaces {
		var allowed []string
		for _, c := range namespaceCapabilities {
			if a.AllowNamespaceOperation(ns, c) {
				allowed = append(allowed, c)
			}
		}
		fmt.Fprintf(&b, "namespace %q listed=%v allows=%v\n", ns, a.AllowNamespace(ns), allowed)
	}
	for _, v := range goldenVariables {
		var allowed []string
		for _, c := range []string{VariablesCapList, VariablesCapRead, VariablesCapWrite, VariablesCapDestroy} {
			if a.AllowVariableOperation(v[0], v[1], c) {
				allowed = append(allowed, c)
			}
		}
		fmt.Fprintf(&b, "variable %s:%s allows=%v\n", v[0], v[1], allowed)
	}
	for _, q := range goldenQueues {
		fmt.Fprintf(&b, "queue %q read=%v write=%v\n", q, a.AllowQueue(q, false), a.AllowQueue(q, true))
	}
	fmt.Fprintf(&b, "node read=%v write=%v\n", a.AllowNodeRead(), a.AllowNodeWrite())
	fmt.Fprintf(&b, "agent read=%v write=%v\n", a.AllowAgentRead(), a.AllowAgentWrite())
	fmt.Fprintf(&b, "operator read=%v write=%v\n", a.AllowOperatorRead(), a.AllowOperatorWrite())
	fmt.Fprintf(&b, "quota read=%v write=%v\n", a.AllowQuotaRead(), a.AllowQuotaWrite())
	return b.String()
}
