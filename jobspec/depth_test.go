package jobspec

import (
	"strings"
	"testing"
)

// TestParseOperatorChains is the regression test for three stack
// overflows (fatal, not recoverable) the agent config fuzzer found in
// hclsyntax, each reachable with a job body under the 8 MiB HTTP limit:
// a run of unary operators and a ternary chain recurse in the parser, a
// binary chain in the evaluator. Each is now refused at the operator that
// passes limits.hcl_max_depth. The inputs that crashed were 4M minus
// signs, 2M additions and 700k ternaries; smaller ones keep the test
// quick (lexing dominates) and take the same path.
func TestParseOperatorChains(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string
	}{
		{"unary minus", strings.Repeat("-", 200_000) + "1", "job.hcl:1,"},
		{"binary plus", strings.Repeat("1+", 100_000) + "1", "job.hcl:1,"},
		{"ternaries", strings.Repeat("true ? 1 : ", 50_000) + "1", "job.hcl:1,"},
		{"binary plus in parentheses over lines", "(" + strings.Repeat("1 +\n", 100) + "1)", "job.hcl:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `job "x" { meta = { a = ` + tt.expr + ` } }`
			job, err := Parse("job.hcl", []byte(src))
			if err == nil || job != nil {
				t.Fatalf("Parse = %v, %v; want an error", job, err)
			}
			for _, want := range []string{tt.want, "Nested too deep", "(limits.hcl_max_depth)"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// TestCheckHCLDepthOperators checks that operators count only within one
// expression: many short expressions pass, one long one does not.
func TestCheckHCLDepthOperators(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		refused bool
	}{
		{"many attributes", strings.Repeat("a = 1 + 2 * 3 - -4\n", 1000), false},
		{"many list items", "a = [" + strings.Repeat("1 + 2, ", 1000) + "]", false},
		{"60 operators", "a = " + strings.Repeat("1 + ", 60) + "1", false},
		{"65 operators", "a = " + strings.Repeat("1 + ", 65) + "1", true},
		{"65 operators over lines in a list", "a = [" + strings.Repeat("1 +\n", 65) + "1]", true},
		{"operators in a template", `a = "${` + strings.Repeat("!", 70) + `true}"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckHCLDepth("f.hcl", []byte(tt.src), 64)
			if got := err != nil; got != tt.refused {
				t.Fatalf("CheckHCLDepth refused = %v (%v), want %v", got, err, tt.refused)
			}
		})
	}
}
