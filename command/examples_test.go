package command

import (
	"path/filepath"
	"strings"
	"testing"
)

// examplesDir holds the job files the README shows; each must validate
// as the README runs it. Agent configs live in its agent/ folder and
// variable files end in .vars.hcl.
const examplesDir = "../examples"

// exampleArgs are the flags the README passes with an example.
var exampleArgs = map[string][]string{
	"hcl2.hcl": {"-var", "greeting=hello", "-var-file", filepath.Join(examplesDir, "hcl2.vars.hcl")},
}

func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".vars.hcl") {
			jobs = append(jobs, f)
		}
	}
	if len(jobs) < 10 {
		t.Fatalf("examples has %d job files, want at least 10", len(jobs))
	}
	for _, f := range jobs {
		t.Run(filepath.Base(f), func(t *testing.T) {
			args := append([]string{"job", "validate"}, exampleArgs[filepath.Base(f)]...)
			code, stdout, stderr := run(t, "", append(args, f)...)
			if code != 0 || !strings.Contains(stdout, "Job validation successful") {
				t.Errorf("job validate %s: exit %d, stdout %q, stderr %q; want success", f, code, stdout, stderr)
			}
		})
	}
}
