package command

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantDetach bool
		wantAddr   string
		wantArgs   []string
	}{
		{name: "single dash", args: []string{"-detach", "job.hcl"}, wantDetach: true, wantArgs: []string{"job.hcl"}},
		{name: "double dash", args: []string{"--detach", "job.hcl"}, wantDetach: true, wantArgs: []string{"job.hcl"}},
		{name: "flag after argument", args: []string{"job.hcl", "--detach"}, wantDetach: true, wantArgs: []string{"job.hcl"}},
		{name: "value forms", args: []string{"--address=http://a:1", "x", "-address", "http://b:2"}, wantAddr: "http://b:2", wantArgs: []string{"x"}},
		{name: "terminator", args: []string{"a", "--", "-detach", "b"}, wantArgs: []string{"a", "-detach", "b"}},
		{name: "stdin dash", args: []string{"-", "-detach"}, wantDetach: true, wantArgs: []string{"-"}},
		{name: "none", args: nil, wantArgs: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			detach := fs.Bool("detach", false, "")
			addr := fs.String("address", "", "")
			got, err := parseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatalf("parse(%q): %v", tt.args, err)
			}
			if *detach != tt.wantDetach || *addr != tt.wantAddr || !slices.Equal(got, tt.wantArgs) {
				t.Errorf("parse(%q) = detach %v, address %q, args %q; want %v, %q, %q",
					tt.args, *detach, *addr, got, tt.wantDetach, tt.wantAddr, tt.wantArgs)
			}
		})
	}
}

func TestTopLevel(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{name: "version", args: []string{"version"}, wantCode: 0, wantOut: "Drover v"},
		{name: "version flag", args: []string{"--version"}, wantCode: 0, wantOut: "Drover v"},
		{name: "help lists commands", args: []string{"--help"}, wantCode: 0, wantOut: "job"},
		{name: "group help", args: []string{"job"}, wantCode: 1, wantOut: "validate    Check a job file"},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 1, wantOut: "Available commands"},
		{name: "command help", args: []string{"alloc", "logs", "-help"}, wantCode: 0, wantOut: "-stderr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit = %d, want %d", code, tt.wantCode)
			}
			if !strings.Contains(stdout+stderr, tt.wantOut) {
				t.Errorf("output = %q, want it to contain %q", stdout+stderr, tt.wantOut)
			}
		})
	}
}

func TestUnreachableAgent(t *testing.T) {
	for _, args := range [][]string{
		{"job", "status"},
		{"node", "status", "-address", "http://127.0.0.1:1"},
		{"job", "run", "testdata/good.hcl"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := run(t, "http://127.0.0.1:1", args...)
			if code != 1 || !strings.Contains(stderr, "connect") {
				t.Errorf("exit %d, stderr %q; want 1 and a connection error", code, stderr)
			}
		})
	}
}
