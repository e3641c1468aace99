package e2e

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestE2E_ShellCompletion: the shell runs drover with COMP_LINE set
// (what `complete -C drover drover` does); drover answers with the
// commands and flags that complete the line.
func TestE2E_ShellCompletion(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"drover ev", []string{"eval"}},
		{"drover eval ", []string{"list", "status"}},
		{"drover job s", []string{"scale", "status", "stop"}},
		{"drover job status -nam", []string{"-namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r := runCLI(t, []string{"COMP_LINE=" + tt.line, "COMP_POINT=" + strconv.Itoa(len(tt.line))})
			got := strings.Fields(r.stdout)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("completions %q, want %q among them (stderr %q)", got, w, r.stderr)
				}
			}
		})
	}
}
