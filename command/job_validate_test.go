package command

import (
	"strings"
	"testing"
)

func TestJobValidate(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr []string
	}{
		{name: "good file", args: []string{"testdata/good.hcl"}, wantCode: 0, wantStdout: "Job validation successful"},
		{name: "example", args: []string{"../examples/gpu.hcl"}, wantCode: 0, wantStdout: "Job validation successful"},
		{name: "auto_revert", args: []string{"testdata/autorevert.hcl"}, wantCode: 0, wantStdout: "Job validation successful"},
		{name: "accepted but not acted on", args: []string{"testdata/manualhealth.hcl"}, wantCode: 0, wantStdout: "Job validation successful",
			wantStderr: []string{"Job warnings:", `health_check = "manual" is accepted but not acted on yet`}},
		{name: "syntax error", args: []string{"testdata/syntax.hcl"}, wantCode: 1,
			wantStderr: []string{"testdata/syntax.hcl:4,", "Invalid expression"}},
		{name: "invalid value", args: []string{"testdata/invalid.hcl"}, wantCode: 1,
			wantStderr: []string{"testdata/invalid.hcl:9,", "topology"}},
		{name: "missing file", args: []string{"testdata/nope.hcl"}, wantCode: 1, wantStderr: []string{"nope.hcl"}},
		{name: "no argument", args: nil, wantCode: 1, wantStderr: []string{"one argument"}},
		{name: "unknown flag", args: []string{"-bogus", "testdata/good.hcl"}, wantCode: 1, wantStderr: []string{"-bogus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", append([]string{"job", "validate"}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("exit = %d, want %d (stdout %q, stderr %q)", code, tt.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout, tt.wantStdout)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr = %q, want it to contain %q", stderr, w)
				}
			}
		})
	}
}

func TestJobRunParseErrorSendsNothing(t *testing.T) {
	f, addr := newFakeAgent(t)
	code, _, stderr := run(t, addr, "job", "run", "testdata/syntax.hcl")
	if code != 1 || !strings.Contains(stderr, "testdata/syntax.hcl:4,") {
		t.Errorf("job run syntax.hcl: exit %d, stderr %q; want 1 with file:line,col", code, stderr)
	}
	if got := f.requests(); len(got) != 0 {
		t.Errorf("requests = %v, want none for a bad job file", got)
	}
}
