package acl

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary rules to Parse. It must never panic; it
// returns a policy or an error that names the file, and a policy it
// returns compiles with New into an ACL that grants what each exact-name
// namespace rule says, unless some rule of that name denies.
func FuzzParse(f *testing.F) {
	inputs, err := filepath.Glob("testdata/*.hcl")
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range inputs {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	for _, src := range []string{
		`namespace "default" { policy = "write" }`,
		"namespace \"a\" {\n  policy = \"read\"\n  capabilities = [\"submit-job\", \"deny\"]\n}\n",
		"namespace \"a*b\" {\n  variables {\n    path \"*\" { capabilities = [\"read\"] }\n  }\n}\n",
		"node { policy = \"read\" }\nnode { policy = \"write\" }\n",
		"queue \"gpu-*\" { policy = \"write\" }\nplugin { policy = \"list\" }\n",
		`namespace "a" { policy = <<EOT` + "\nread\nEOT\n}",
		`namespace "a" { capabilities = [[[["x"]]]] }`,
		`namespace "a" { policy = "${"${x}"}" }`,
		`namespace "a" { policy = x[0][1].y }`,
		"namespace \"a\" { capabilities = [\"read-job\",] }",
		"\xef\xbb\xbfnode {}",
		"# comment\n/* block */ node {}",
	} {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse("fuzz.hcl", src)
		switch {
		case err != nil && p != nil:
			t.Fatalf("got a policy and an error %v", err)
		case err != nil && !strings.HasPrefix(err.Error(), "fuzz.hcl"):
			t.Fatalf("error %q does not start with the file name", err)
		case err == nil && p == nil:
			t.Fatalf("got neither a policy nor an error")
		case err == nil:
			checkCompiles(t, p, src)
		}
	})
}

// checkCompiles compiles p and checks its exact-name namespace rules.
func checkCompiles(t *testing.T, p *Policy, src string) {
	t.Helper()
	if p.Raw != src {
		t.Fatalf("Raw = %q, want the rules as given", p.Raw)
	}
	a := New(false, []*Policy{p})
	denied := map[string]bool{}
	for _, r := range p.Namespaces {
		if r.Policy == PolicyDeny || slices.Contains(r.Capabilities, CapDeny) {
			denied[r.Name] = true
		}
	}
	for _, r := range p.Namespaces {
		if strings.Contains(r.Name, "*") {
			continue
		}
		for _, c := range append(ExpandNamespacePolicy(r.Policy), r.Capabilities...) {
			if got, want := a.AllowNamespaceOperation(r.Name, c), !denied[r.Name] && c != CapDeny; got != want {
				t.Fatalf("AllowNamespaceOperation(%q, %q) = %v, want %v", r.Name, c, got, want)
			}
		}
	}
}
