package template

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// fakeVars is an in-memory VarReader.
type fakeVars map[string]structs.VariableItems

func (f fakeVars) Read(_ context.Context, path string) (*structs.VariableDecrypted, error) {
	items, ok := f[path]
	if !ok {
		return nil, nil
	}
	return &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: path}, Items: items}, nil
}

func (f fakeVars) List(_ context.Context, prefix string) ([]*structs.VariableDecrypted, error) {
	var out []*structs.VariableDecrypted
	for p := range f {
		if strings.HasPrefix(p, prefix) {
			v, _ := f.Read(context.Background(), p)
			out = append(out, v)
		}
	}
	return out, nil
}

func render(t *testing.T, text string, mod func(*structs.Template)) (*Result, error) {
	t.Helper()
	tm := &structs.Template{DestPath: "out", EmbeddedTmpl: text}
	if mod != nil {
		mod(tm)
	}
	tm.Canonicalize()
	vars := fakeVars{"nomad/jobs/web": {"db_pass": "s3cret", "user": "app"}, "nomad/jobs/web/g": {"x": "1"}}
	return Render(context.Background(), Input{Template: tm, Text: text, Env: map[string]string{"NOMAD_TASK_NAME": "t"}, Vars: vars, MaxOutput: 4096})
}

func TestRenderFunctions(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"env", `{{ env "NOMAD_TASK_NAME" }}`, "t"},
		{"nomadVar", `{{ with nomadVar "nomad/jobs/web" }}DB_PASS={{ .db_pass }}{{ end }}`, "DB_PASS=s3cret"},
		{"nomadVar range", `{{ range $k, $v := nomadVar "nomad/jobs/web" }}{{ $k }}={{ $v }};{{ end }}`, "db_pass=s3cret;user=app;"},
		{"nomadVarExists", `{{ nomadVarExists "nomad/jobs/web" }} {{ nomadVarExists "nomad/jobs/none" }}`, "true false"},
		{"nomadVarList", `{{ range nomadVarList "nomad/jobs/web/" }}{{ .Path }}{{ end }}`, "nomad/jobs/web/g"},
		{"strings", `{{ "a,b" | split "," | join "+" }} {{ toUpper "x" }} {{ replaceAll "a" "b" "aa" }} {{ trimSpace "  y " }}`, "a+b X bb y"},
		{"base64", `{{ base64Encode "hi" }} {{ base64Decode "aGk=" }}`, "aGk= hi"},
		{"json", `{{ (parseJSON "{\"a\":[1,2]}").a | toJSON }} {{ parseInt "42" }}`, "[1,2] 42"},
		{"contains", `{{ contains "ell" "hello" }}`, "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := render(t, tt.text, nil)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got := string(res.Output); got != tt.want {
				t.Errorf("output = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenderDelimsAndTracking(t *testing.T) {
	res, err := render(t, `[[ with nomadVar "nomad/jobs/web" ]][[ .user ]][[ end ]] {{ not a template }}`, func(tm *structs.Template) {
		tm.LeftDelim, tm.RightDelim = "[[", "]]"
	})
	if err != nil || string(res.Output) != "app {{ not a template }}" {
		t.Fatalf("Render = %q, %v", res.Output, err)
	}
	if len(res.Paths) != 1 || res.Paths[0] != "nomad/jobs/web" {
		t.Errorf("paths read = %v", res.Paths)
	}
}

func TestRenderRefusals(t *testing.T) {
	tests := []struct {
		name, text, want string
		mod              func(*structs.Template)
	}{
		{"consul key", `{{ key "a/b" }}`, "needs Consul", nil},
		{"consul service", `{{ range service "web" }}{{ end }}`, "needs Consul", nil},
		{"vault secret", `{{ with secret "kv/x" }}{{ end }}`, "needs Vault", nil},
		{"output bound", `{{ range split "," "` + strings.Repeat("a,", 3000) + `" }}xx{{ end }}`, "output over 4096 bytes", nil},
		{"missing key", `{{ with nomadVar "nomad/jobs/web" }}{{ .nope }}{{ end }}`, "map has no entry", func(tm *structs.Template) { tm.ErrMissingKey = true }},
		{"parse error", `{{ if }}`, "parse template", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, tt.text, tt.mod)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Render = %v, want %q", err, tt.want)
			}
		})
	}
	_, err := render(t, `{{ with nomadVar "nomad/jobs/none" }}{{ end }}`, nil)
	if !errors.Is(err, ErrMissingVariable) {
		t.Errorf("missing variable = %v, want ErrMissingVariable", err)
	}
}

func TestWriteFileStaysInside(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "f"), filepath.Join(root, "filelink")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"../x", "/etc/passwd", "a/../../x", "link/x", "filelink"} {
		if _, err := WriteFile(root, rel, []byte("x"), 0o644); !errors.Is(err, ErrEscapes) {
			t.Errorf("WriteFile(%q) = %v, want ErrEscapes", rel, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("something was written outside: %v", entries)
	}
	changed, err := WriteFile(root, "secrets/env", []byte("A=1"), 0o600)
	if err != nil || !changed {
		t.Fatalf("WriteFile = %v, %v", changed, err)
	}
	if changed, _ := WriteFile(root, "secrets/env", []byte("A=1"), 0o600); changed {
		t.Error("same content reported as changed")
	}
	fi, err := os.Stat(filepath.Join(root, "secrets/env"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, %v", fi.Mode(), err)
	}
}

func TestParseEnv(t *testing.T) {
	got, err := ParseEnv([]byte("# comment\nDB_PASS=s3cret\nexport USER=\"a b\"\n\nQ='x=y'\n"))
	if err != nil || got["DB_PASS"] != "s3cret" || got["USER"] != "a b" || got["Q"] != "x=y" || len(got) != 3 {
		t.Fatalf("ParseEnv = %v, %v", got, err)
	}
	if _, err := ParseEnv([]byte("not a line")); err == nil {
		t.Error("a line without = was accepted")
	}
	if _, err := ParseEnv([]byte("1BAD=x")); err == nil {
		t.Error("a bad key was accepted")
	}
}
