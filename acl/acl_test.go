package acl

import (
	"testing"
)

// mustParse parses each source as one policy.
func mustParse(t *testing.T, srcs ...string) []*Policy {
	t.Helper()
	var out []*Policy
	for i, src := range srcs {
		p, err := Parse("policy.hcl", src)
		if err != nil {
			t.Fatalf("policy %d: %v", i, err)
		}
		out = append(out, p)
	}
	return out
}

func TestNamespaceGlobPrecedence(t *testing.T) {
	rules := `
namespace "*"          { policy = "deny" }
namespace "prod"       { policy = "read" }
namespace "prod-*"     { policy = "scale" }
namespace "prod-api-*" { policy = "write" }
namespace "*-api-*"    { capabilities = ["read-logs"] }
namespace "*-dev"      { capabilities = ["list-jobs"] }
namespace "team-*-dev" { capabilities = ["read-job"] }
namespace "b*"         { capabilities = ["read-fs"] }
namespace "*b"         { capabilities = ["alloc-exec"] }
`
	a := New(false, mustParse(t, rules))
	tests := []struct {
		ns, capability string
		want           bool
	}{
		{"prod", CapReadJob, true},          // exact beats every glob
		{"prod", CapScaleJob, false},        // exact read, not prod-*'s scale
		{"prod-web", CapScaleJob, true},     // prod-* (5 literal bytes) beats * (0)
		{"prod-web", CapReadJob, false},     // scale grants no read-job
		{"prod-api-v1", CapSubmitJob, true}, // prod-api-* (9) beats prod-* and *-api-* (5)
		{"prod-api-v1", CapSubmitSharedGPU, true},
		{"x-api-y", CapReadLogs, true},        // *-api-* (5) beats * (0)
		{"x-api-y", CapListJobs, false},       // only read-logs
		{"team-a-dev", CapReadJob, true},      // team-*-dev (9) beats *-dev (4)
		{"team-a-dev", CapListJobs, false},    // the closest glob only: no union with *-dev
		{"other-dev", CapListJobs, true},      // *-dev
		{"bob", CapAllocExec, true},           // b* and *b tie on 1 literal byte: "*b" sorts first
		{"bob", CapReadFS, false},             // ... so b* is not used
		{"staging", CapListJobs, false},       // * denies
		{"", CapReadJob, false},               // * matches the empty name and denies
		{"prod", "no-such-capability", false}, // unknown capabilities are never granted
		{"prod", CapDeny, false},              // deny is not a grant
	}
	for _, tt := range tests {
		t.Run(tt.ns+"/"+tt.capability, func(t *testing.T) {
			if got := a.AllowNamespaceOperation(tt.ns, tt.capability); got != tt.want {
				t.Errorf("AllowNamespaceOperation(%q, %q) = %v, want %v", tt.ns, tt.capability, got, tt.want)
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "a", true},
		{"a*", "ba", false},
		{"*a", "ba", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "abcbc", true},
		{"a*b*c", "acb", false},
		{"**", "x", true},
		{"a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.name, func(t *testing.T) {
			if got := globMatch(tt.pattern, tt.name); got != tt.want {
				t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
			}
		})
	}
}

func TestMergePolicies(t *testing.T) {
	tests := []struct {
		name           string
		policies       []string
		ns, capability string
		want           bool
	}{
		{
			name:     "capabilities add up",
			policies: []string{`namespace "a" { policy = "read" }`, `namespace "a" { capabilities = ["submit-job"] }`},
			ns:       "a", capability: CapSubmitJob, want: true,
		},
		{
			name:     "policy and capabilities in one rule add up",
			policies: []string{"namespace \"a\" {\npolicy = \"scale\"\ncapabilities = [\"read-logs\"]\n}"},
			ns:       "a", capability: CapReadLogs, want: true,
		},
		{
			name:     "deny policy in a later policy wins",
			policies: []string{`namespace "a" { policy = "write" }`, `namespace "a" { policy = "deny" }`},
			ns:       "a", capability: CapReadJob, want: false,
		},
		{
			name:     "deny policy in an earlier policy wins",
			policies: []string{`namespace "a" { policy = "deny" }`, `namespace "a" { policy = "write" }`},
			ns:       "a", capability: CapReadJob, want: false,
		},
		{
			name:     "deny capability beside a grant in one rule",
			policies: []string{"namespace \"a\" {\npolicy = \"write\"\ncapabilities = [\"deny\"]\n}"},
			ns:       "a", capability: CapListJobs, want: false,
		},
		{
			name:     "deny capability in another policy",
			policies: []string{`namespace "a" { capabilities = ["read-job"] }`, `namespace "a" { capabilities = ["list-jobs", "deny"] }`},
			ns:       "a", capability: CapReadJob, want: false,
		},
		{
			name:     "repeated rule in one policy merges too",
			policies: []string{"namespace \"a\" { policy = \"write\" }\nnamespace \"a\" { policy = \"deny\" }"},
			ns:       "a", capability: CapSubmitJob, want: false,
		},
		{
			name:     "a glob deny does not reach an exact grant",
			policies: []string{`namespace "*" { policy = "deny" }`, `namespace "a" { policy = "read" }`},
			ns:       "a", capability: CapReadJob, want: true,
		},
		{
			name:     "an exact deny beats a glob grant",
			policies: []string{`namespace "*" { policy = "write" }`, `namespace "a" { policy = "deny" }`},
			ns:       "a", capability: CapReadJob, want: false,
		},
		{
			name:     "globs of the same pattern merge",
			policies: []string{`namespace "ml-*" { policy = "read" }`, `namespace "ml-*" { capabilities = ["submit-shared-gpu"] }`},
			ns:       "ml-x", capability: CapSubmitSharedGPU, want: true,
		},
		{
			name:     "no rule, no grant",
			policies: []string{`namespace "a" { policy = "write" }`},
			ns:       "b", capability: CapListJobs, want: false,
		},
		{
			name:     "star asks whether any namespace grants it",
			policies: []string{`namespace "a" { policy = "deny" }`, `namespace "b-*" { policy = "read" }`},
			ns:       "*", capability: CapListJobs, want: true,
		},
		{
			name:     "star ignores denied rules",
			policies: []string{`namespace "a" { policy = "write" }`, `namespace "a" { policy = "deny" }`},
			ns:       "*", capability: CapListJobs, want: false,
		},
		{
			name:     "no policies",
			policies: nil,
			ns:       "default", capability: CapListJobs, want: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(false, mustParse(t, tt.policies...))
			if got := a.AllowNamespaceOperation(tt.ns, tt.capability); got != tt.want {
				t.Errorf("AllowNamespaceOperation(%q, %q) = %v, want %v", tt.ns, tt.capability, got, tt.want)
			}
		})
	}
}

func TestAllowNamespace(t *testing.T) {
	a := New(false, mustParse(t, `
namespace "read"   { policy = "read" }
namespace "scale"  { policy = "scale" }
namespace "one"    { capabilities = ["read-logs"] }
namespace "empty"  {}
namespace "denied" { policy = "deny" }
`))
	tests := []struct {
		ns   string
		want bool
	}{
		{"read", true},
		{"scale", true},
		{"one", true},
		{"empty", false}, // a rule that grants nothing lists nothing
		{"denied", false},
		{"other", false},
		{"*", true},
	}
	for _, tt := range tests {
		t.Run(tt.ns, func(t *testing.T) {
			if got := a.AllowNamespace(tt.ns); got != tt.want {
				t.Errorf("AllowNamespace(%q) = %v, want %v", tt.ns, got, tt.want)
			}
		})
	}
	t.Run("star with only denies", func(t *testing.T) {
		denied := New(false, mustParse(t, `namespace "*" { policy = "deny" }`))
		if denied.AllowNamespace("*") {
			t.Errorf("AllowNamespace(\"*\") = true with only deny rules, want false")
		}
	})
}

func TestCoarseRules(t *testing.T) {
	type grants struct{ read, write bool }
	tests := []struct {
		name     string
		policies []string
		want     grants
	}{
		{"absent", []string{`namespace "a" {}`}, grants{false, false}},
		{"read", []string{`node { policy = "read" }`}, grants{true, false}},
		{"write implies read", []string{`node { policy = "write" }`}, grants{true, true}},
		{"strongest wins", []string{`node { policy = "read" }`, `node { policy = "write" }`}, grants{true, true}},
		{"deny wins over write", []string{`node { policy = "write" }`, `node { policy = "deny" }`}, grants{false, false}},
		{"deny wins in any order", []string{`node { policy = "deny" }`, `node { policy = "read" }`}, grants{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(false, mustParse(t, tt.policies...))
			if got := (grants{a.AllowNodeRead(), a.AllowNodeWrite()}); got != tt.want {
				t.Errorf("node (read, write) = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("areas are separate", func(t *testing.T) {
		a := New(false, mustParse(t, "agent { policy = \"read\" }\noperator { policy = \"write\" }\nquota { policy = \"deny\" }"))
		got := []bool{a.AllowNodeRead(), a.AllowAgentRead(), a.AllowAgentWrite(), a.AllowOperatorRead(), a.AllowOperatorWrite(), a.AllowQuotaRead(), a.AllowQuotaWrite()}
		want := []bool{false, true, false, true, true, false, false}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("grants = %v, want %v", got, want)
				break
			}
		}
	})
}

func TestAllowQueue(t *testing.T) {
	tests := []struct {
		name     string
		policies []string
		queue    string
		write    bool
		want     bool
	}{
		{"default is open without rules", nil, "default", true, true},
		{"default is open to read", nil, "default", false, true},
		{"other queues need a rule", nil, "gpu", false, false},
		{"glob write", []string{`queue "gpu-*" { policy = "write" }`}, "gpu-a100", true, true},
		{"glob does not match", []string{`queue "gpu-*" { policy = "write" }`}, "cpu", false, false},
		{"read rule cannot submit", []string{`queue "gpu" { policy = "read" }`}, "gpu", true, false},
		{"read rule can view", []string{`queue "gpu" { policy = "read" }`}, "gpu", false, true},
		{"exact beats glob", []string{`queue "gpu-*" { policy = "write" }`, `queue "gpu-reserved" { policy = "read" }`}, "gpu-reserved", true, false},
		{"deny in any policy wins", []string{`queue "gpu" { policy = "write" }`, `queue "gpu" { policy = "deny" }`}, "gpu", false, false},
		{"default can be closed", []string{`queue "default" { policy = "deny" }`}, "default", true, false},
		{"a matching glob closes default", []string{`queue "*" { policy = "read" }`}, "default", true, false},
		{"a rule without a policy grants nothing", []string{`queue "default" {}`}, "default", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(false, mustParse(t, tt.policies...))
			if got := a.AllowQueue(tt.queue, tt.write); got != tt.want {
				t.Errorf("AllowQueue(%q, %v) = %v, want %v", tt.queue, tt.write, got, tt.want)
			}
		})
	}
}

func TestManagement(t *testing.T) {
	denyAll := mustParse(t, "namespace \"*\" { policy = \"deny\" }\nnode { policy = \"deny\" }\nqueue \"*\" { policy = \"deny\" }")
	for name, a := range map[string]*ACL{
		"ManagementACL":           ManagementACL,
		"New(true) ignores rules": New(true, denyAll),
	} {
		t.Run(name, func(t *testing.T) {
			got := []bool{
				a.IsManagement(), a.AllowNamespaceOperation("any", CapAllocNodeExec), a.AllowNamespace("any"),
				a.AllowNodeWrite(), a.AllowAgentWrite(), a.AllowOperatorWrite(), a.AllowQuotaWrite(),
				a.AllowQueue("any", true),
			}
			for i, ok := range got {
				if !ok {
					t.Errorf("check %d = false, want every check true: %v", i, got)
				}
			}
		})
	}
}

// TestNilACL: a nil ACL fails closed, so a missing resolution denies.
func TestNilACL(t *testing.T) {
	var a *ACL
	got := []bool{
		a.IsManagement(), a.AllowNamespaceOperation("default", CapListJobs), a.AllowNamespace("default"),
		a.AllowNodeRead(), a.AllowAgentRead(), a.AllowOperatorRead(), a.AllowQuotaRead(),
		a.AllowQueue("default", false),
	}
	for i, ok := range got {
		if ok {
			t.Errorf("check %d = true, want every check false: %v", i, got)
		}
	}
}

func TestNewSkipsNilAndUnknown(t *testing.T) {
	a := New(false, []*Policy{
		nil,
		{Namespaces: []*NamespaceRule{nil, {Name: "a", Policy: "admin", Capabilities: []string{"made-up", CapReadJob}}}, Queues: []*QueueRule{nil}, Node: "admin"},
	})
	if !a.AllowNamespaceOperation("a", CapReadJob) {
		t.Errorf("AllowNamespaceOperation(a, read-job) = false, want true")
	}
	if a.AllowNamespaceOperation("a", CapListJobs) || a.AllowNodeRead() {
		t.Errorf("an unknown policy value granted something")
	}
}
