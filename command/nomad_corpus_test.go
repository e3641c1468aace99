package command

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusDir holds Nomad job files written the way Nomad's documentation
// writes them: each must pass `drover job validate` unchanged. Files in
// its refused/ folder use an integration Drover does not have; their
// first line, "# want: X", names the word the refusal must contain.
const corpusDir = "../jobspec/testdata/nomad-corpus"

func TestNomadCorpusValidates(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.nomad.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 60 {
		t.Fatalf("corpus has %d files, want at least 60", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, stdout, stderr := run(t, "", "job", "validate", f)
			if code != 0 || !strings.Contains(stdout, "Job validation successful") {
				t.Errorf("job validate %s: exit %d, stdout %q, stderr %q; want success", f, code, stdout, stderr)
			}
		})
	}
}

func TestNomadCorpusRefusesIntegrations(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "refused", "*.nomad.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no refused corpus files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := corpusWant(t, f)
			code, _, stderr := run(t, "", "job", "validate", f)
			if code != 1 {
				t.Fatalf("job validate %s: exit %d, want 1 (stderr %q)", f, code, stderr)
			}
			if !strings.Contains(stderr, want) {
				t.Errorf("job validate %s: stderr %q, want it to name %q", f, stderr, want)
			}
			if !strings.Contains(stderr, f+":") {
				t.Errorf("job validate %s: stderr %q, want the file:line,col of the refusal", f, stderr)
			}
		})
	}
}

func corpusWant(t *testing.T, path string) string {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	line, _ := bufio.NewReader(fh).ReadString('\n')
	want, ok := strings.CutPrefix(strings.TrimSpace(line), "# want: ")
	if !ok || want == "" {
		t.Fatalf("%s: first line %q, want \"# want: <word>\"", path, line)
	}
	return want
}
