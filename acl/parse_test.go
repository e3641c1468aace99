package acl

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want *Policy
	}{
		{
			name: "empty",
			src:  "",
			want: &Policy{},
		},
		{
			name: "namespace shorthand",
			src:  `namespace "default" { policy = "write" }`,
			want: &Policy{Namespaces: []*NamespaceRule{{Name: "default", Policy: "write"}}},
		},
		{
			name: "namespace policy and capabilities",
			src: `namespace "ml-*" {
  policy       = "read"
  capabilities = ["submit-job", "submit-shared-gpu", "deny"]
}`,
			want: &Policy{Namespaces: []*NamespaceRule{{Name: "ml-*", Policy: "read", Capabilities: []string{"submit-job", "submit-shared-gpu", "deny"}}}},
		},
		{
			name: "empty capabilities",
			src:  `namespace "a" { capabilities = [] }`,
			want: &Policy{Namespaces: []*NamespaceRule{{Name: "a", Capabilities: []string{}}}},
		},
		{
			name: "coarse blocks",
			src:  "node { policy = \"write\" }\nagent { policy = \"read\" }\noperator { policy = \"deny\" }\nquota { policy = \"read\" }\n",
			want: &Policy{Node: "write", Agent: "read", Operator: "deny", Quota: "read"},
		},
		{
			name: "queues",
			src:  "queue \"default\" { policy = \"deny\" }\nqueue \"gpu-*\" { policy = \"write\" }\n",
			want: &Policy{Queues: []*QueueRule{{Name: "default", Policy: "deny"}, {Name: "gpu-*", Policy: "write"}}},
		},
		{
			name: "repeated namespace rules are kept for New to merge",
			src:  "namespace \"a\" { policy = \"read\" }\nnamespace \"a\" { policy = \"deny\" }\n",
			want: &Policy{Namespaces: []*NamespaceRule{{Name: "a", Policy: "read"}, {Name: "a", Policy: "deny"}}},
		},
		{
			name: "nomad-only blocks are checked and dropped; variables are kept",
			src: `plugin { policy = "list" }
node_pool "gpu-*" {
  policy       = "write"
  capabilities = ["delete"]
}
host_volume "scratch" { capabilities = ["mount-readonly", "mount-readwrite"] }
namespace "a" {
  variables {
    path "*" { capabilities = ["list", "read", "write", "destroy"] }
  }
}`,
			want: &Policy{Namespaces: []*NamespaceRule{{Name: "a", Variables: []*VariablesPathRule{
				{PathSpec: "*", Capabilities: []string{"list", "read", "write", "destroy"}}}}}},
		},
		{
			name: "escapes are decoded",
			src:  "namespace \"a\" {\n  policy = \"r\\u0065ad\"\n  capabilities = [\"submit-\\u006aob\"]\n}\n",
			want: &Policy{Namespaces: []*NamespaceRule{{Name: "a", Policy: "read", Capabilities: []string{"submit-job"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("policy.hcl", tt.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.want.Raw = tt.src
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse = %s, want %s", dumpPolicy(got), dumpPolicy(tt.want))
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "unknown capability",
			src:  "namespace \"a\" {\n  policy = \"read\"\n  capabilities = [\"submit-jobz\"]\n}\n",
			want: `policy.hcl:3,19: namespace "a": unknown capability "submit-jobz"`,
		},
		{
			name: "unknown namespace policy",
			src:  `namespace "a" { policy = "admin" }`,
			want: `policy.hcl:1,26: namespace "a": unknown policy "admin"; want deny, read, write or scale`,
		},
		{
			name: "scale is for namespaces only",
			src:  `node { policy = "scale" }`,
			want: `policy.hcl:1,17: node: unknown policy "scale"; want deny, read or write`,
		},
		{
			name: "queue policy",
			src:  `queue "gpu" { policy = "scale" }`,
			want: `policy.hcl:1,24: queue "gpu": unknown policy "scale"; want deny, read or write`,
		},
		{
			name: "plugin policy",
			src:  `plugin { policy = "write" }`,
			want: `policy.hcl:1,19: plugin: unknown policy "write"; want deny, read or list`,
		},
		{
			name: "invalid namespace name",
			src:  `namespace "a b" {}`,
			want: `policy.hcl:1,11: namespace "a b": invalid name; want 1 to 128 letters, digits, dashes or * wildcards`,
		},
		{
			name: "namespace name too long",
			src:  `namespace "` + strings.Repeat("a", 129) + `" {}`,
			want: `policy.hcl:1,11: namespace "` + strings.Repeat("a", 129) + `": invalid name; want 1 to 128 letters, digits, dashes or * wildcards`,
		},
		{
			name: "namespace without a name",
			src:  `namespace {}`,
			want: `policy.hcl:1,1: namespace block: want one label, the namespace name; got 0`,
		},
		{
			name: "empty namespace name",
			src:  `namespace "" {}`,
			want: `policy.hcl:1,11: namespace block: empty namespace name`,
		},
		{
			name: "node with a label",
			src:  `node "x" { policy = "read" }`,
			want: `policy.hcl:1,6: node block: want no labels; got 1`,
		},
		{
			name: "unknown block",
			src:  `namespaces "a" {}`,
			want: `policy.hcl:1,1: unknown block "namespaces"; want one of agent, host_volume, namespace, node, node_pool, operator, plugin, queue, quota`,
		},
		{
			name: "top-level attribute",
			src:  `policy = "read"`,
			want: `policy.hcl:1,1: unknown attribute "policy"; a policy is made of blocks: agent, host_volume, namespace, node, node_pool, operator, plugin, queue, quota`,
		},
		{
			name: "unknown attribute in a rule",
			src:  `namespace "a" { polcy = "read" }`,
			want: `policy.hcl:1,17: namespace "a": unknown attribute "polcy"`,
		},
		{
			name: "capabilities on node",
			src:  `node { capabilities = ["read"] }`,
			want: `policy.hcl:1,8: node: unknown attribute "capabilities"`,
		},
		{
			name: "unknown nested block",
			src:  "namespace \"a\" {\n  job {}\n}\n",
			want: `policy.hcl:2,3: namespace "a": unknown block "job"`,
		},
		{
			name: "variables capability",
			src:  "namespace \"a\" {\n  variables {\n    path \"*\" { capabilities = [\"fly\"] }\n  }\n}\n",
			want: `policy.hcl:3,32: namespace "a": variables: path "*": unknown capability "fly"`,
		},
		{
			name: "duplicate singleton",
			src:  "node { policy = \"read\" }\nnode { policy = \"write\" }\n",
			want: `policy.hcl:2,1: duplicate node block; the first is at line 1`,
		},
		{
			name: "repeated unknown blocks are unknown, not duplicates",
			src:  "foo {}\nfoo {}\n",
			want: "policy.hcl:1,1: unknown block \"foo\"; want one of agent, host_volume, namespace, node, node_pool, operator, plugin, queue, quota\npolicy.hcl:2,1: unknown block \"foo\"; want one of agent, host_volume, namespace, node, node_pool, operator, plugin, queue, quota",
		},
		{
			name: "policy not a string",
			src:  `namespace "a" { policy = ["read"] }`,
			want: `policy.hcl:1,26: namespace "a": policy: want a string`,
		},
		{
			name: "capabilities not a list",
			src:  `namespace "a" { capabilities = "read-job" }`,
			want: `policy.hcl:1,32: namespace "a": capabilities: want a list of strings`,
		},
		{
			name: "capability not a string",
			src:  `namespace "a" { capabilities = ["read-job", 3] }`,
			want: `policy.hcl:1,45: namespace "a": capabilities: want a list of strings`,
		},
		{
			name: "variable",
			src:  `namespace "a" { policy = read }`,
			want: `policy.hcl:1,26: Variables not allowed; Variables may not be used here.`,
		},
		{
			name: "interpolation",
			src:  `namespace "a" { policy = "${x}" }`,
			want: `policy.hcl:1,27: unexpected "${": policy values are literal strings; write $${ or %%{ for a literal ${ or %{`,
		},
		{
			name: "operator",
			src:  `namespace "a" { policy = true ? "read" : "write" }`,
			want: `policy.hcl:1,31: unexpected "?": policy values are strings and lists of strings, not expressions`,
		},
		{
			name: "syntax",
			src:  "namespace \"a\" {\n",
			want: `policy.hcl:1,15: Unclosed configuration block; There is no closing brace for this block before the end of the file. This may be caused by incorrect brace nesting elsewhere in this file.`,
		},
		{
			name: "every problem in source order",
			src:  "node { policy = \"x\" }\nnamespace \"a\" { policy = \"y\" }\n",
			want: "policy.hcl:1,17: node: unknown policy \"x\"; want deny, read or write\npolicy.hcl:2,26: namespace \"a\": unknown policy \"y\"; want deny, read, write or scale",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("policy.hcl", tt.src)
			if err == nil {
				t.Fatalf("Parse = %s, want error %q", dumpPolicy(p), tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n got %q\nwant %q", got, tt.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("errors.As(%T, *Error) = false", err)
			}
		})
	}
}

// TestParseBounds checks that oversized or deeply nested rules are
// refused before the recursive parser sees them.
func TestParseBounds(t *testing.T) {
	manyBlocks := strings.Repeat("namespace \"a\" {}\n", MaxRuleBlocks)
	tests := []struct {
		name string
		src  string
		want string // prefix of the error
	}{
		{"too large", strings.Repeat(" ", MaxRulesSize+1), "policy.hcl: rules are 65537 bytes; the limit is 65536 bytes (MaxRulesSize)"},
		{"too many blocks", manyBlocks + "node {}\n", "policy.hcl:1001,1: more than 1000 rule blocks (MaxRuleBlocks)"},
		{"too many nested blocks", "namespace \"a\" {\n  variables {\n" + strings.Repeat("    path \"x\" {}\n", MaxRuleBlocks) + "  }\n}\n", "policy.hcl:1001,5: more than 1000 rule blocks"},
		{"60,000-deep unclosed list", `namespace "a" { capabilities = ` + strings.Repeat("[", 60000), "policy.hcl:1,63: nested deeper than 32 levels"},
		{"deep closed list", `namespace "a" { capabilities = ` + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + " }", "policy.hcl:1,63: nested deeper than 32 levels"},
		{"deep objects", `namespace "a" { capabilities = ` + strings.Repeat("{a=", 20000), "policy.hcl:1,"},
		{"deep parens", `namespace "a" { policy = ` + strings.Repeat("(", 60000), "policy.hcl:1,57: nested deeper than 32 levels"},
		{"deep blocks", strings.Repeat("a {\n", 10000), "policy.hcl:33,3: nested deeper than 32 levels"},
		{"deep unary", `namespace "a" { policy = ` + strings.Repeat("!", 60000) + "true }", `policy.hcl:1,26: unexpected "!"`},
		{"deep conditional", `namespace "a" { policy = ` + strings.Repeat("true ? 1 : ", 5000) + "1 }", `policy.hcl:1,31: unexpected "?"`},
		{"deep templates", `namespace "a" { policy = "` + strings.Repeat(`${"`, 20000), `policy.hcl:1,27: unexpected "${"`},
		{"deep index", `namespace "a" { policy = x` + strings.Repeat("[0]", 20000) + " }", "policy.hcl:1,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("policy.hcl", tt.src)
			if err == nil {
				t.Fatalf("Parse: no error, want %q...", tt.want)
			}
			if got := err.Error(); !strings.HasPrefix(got, tt.want) {
				t.Errorf("error:\n got %.200q\nwant prefix %q", got, tt.want)
			}
		})
	}
	t.Run("limits themselves are fine", func(t *testing.T) {
		p, err := Parse("policy.hcl", manyBlocks)
		if err != nil {
			t.Fatalf("Parse %d blocks: %v", MaxRuleBlocks, err)
		}
		if got := len(p.Namespaces); got != MaxRuleBlocks {
			t.Errorf("got %d namespace rules, want %d", got, MaxRuleBlocks)
		}
		src := `namespace "a" { capabilities = ` + strings.Repeat("[", maxNesting-2) + strings.Repeat("]", maxNesting-2) + " }"
		if _, err := Parse("policy.hcl", src); strings.Contains(fmt.Sprint(err), "nested deeper") {
			t.Errorf("nesting of %d: %v", maxNesting, err)
		}
	})
}

func TestExpandNamespacePolicy(t *testing.T) {
	read := []string{CapListJobs, CapParseJob, CapReadJob, CapCSIListVolume, CapCSIReadVolume, CapReadJobScaling, CapListScalingPolicies, CapReadScalingPolicy}
	tests := []struct {
		policy string
		want   []string
	}{
		{PolicyDeny, []string{CapDeny}},
		{PolicyRead, read},
		{PolicyWrite, append(slices.Clone(read), CapSubmitJob, CapDispatchJob, CapReadLogs, CapReadFS, CapAllocExec, CapAllocLifecycle,
			CapCSIWriteVolume, CapCSIMountVolume, CapScaleJob, CapSubmitRecommendation, CapSubmitSharedGPU)},
		{PolicyScale, []string{CapListScalingPolicies, CapReadScalingPolicy, CapReadJobScaling, CapScaleJob}},
		{"", []string{}},
		{"admin", nil},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			got := ExpandNamespacePolicy(tt.policy)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) || (got == nil) != (tt.want == nil) {
				t.Errorf("ExpandNamespacePolicy(%q) = %q, want %q", tt.policy, got, want)
			}
		})
	}
	t.Run("returns a copy", func(t *testing.T) {
		ExpandNamespacePolicy(PolicyWrite)[0] = "mutated"
		if got := ExpandNamespacePolicy(PolicyWrite)[0]; got == "mutated" {
			t.Errorf("ExpandNamespacePolicy shares its result")
		}
	})
}

func dumpPolicy(p *Policy) string {
	if p == nil {
		return "<nil>"
	}
	return strings.TrimSpace(renderPolicy(p))
}
