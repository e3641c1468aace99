package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the parser's output")

// goldenInputs are the job files under testdata: *.hcl and *.job.json.
func goldenInputs(t testing.TB) []string {
	t.Helper()
	hcl, err := filepath.Glob("testdata/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	js, err := filepath.Glob("testdata/*.job.json")
	if err != nil {
		t.Fatal(err)
	}
	return append(hcl, js...)
}

// indentJSON renders v as the golden files hold it: indented, with <, >
// and & left readable.
func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func goldenPath(input string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(input, ".hcl"), ".job.json")
	return base + ".golden.json"
}

// TestGolden parses every job file under testdata and compares the job,
// as indented JSON, with its golden file. Run with -update to rewrite
// them, then review the diff.
func TestGolden(t *testing.T) {
	inputs := goldenInputs(t)
	if len(inputs) < 6 {
		t.Fatalf("got %d golden inputs, want at least 6", len(inputs))
	}
	for _, input := range inputs {
		t.Run(filepath.Base(input), func(t *testing.T) {
			job, err := ParseFile(input)
			if err != nil {
				t.Fatalf("ParseFile: %v", err)
			}
			got := indentJSON(t, job)
			golden := goldenPath(input)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run go test ./jobspec -update): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("parsed job differs from %s (run with -update and review the diff)\ngot:\n%s", golden, got)
			}
		})
	}
}

// TestGoldenRoundTrip checks that the JSON of a parsed job parses back
// into the same job, so the JSON path and the HCL path agree.
func TestGoldenRoundTrip(t *testing.T) {
	for _, input := range goldenInputs(t) {
		t.Run(filepath.Base(input), func(t *testing.T) {
			job, err := ParseFile(input)
			if err != nil {
				t.Fatal(err)
			}
			first, err := json.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse("roundtrip.json", first)
			if err != nil {
				t.Fatalf("Parse(JSON of %s): %v", input, err)
			}
			second, err := json.Marshal(again)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, second) {
				t.Errorf("round trip differs:\ngot  %s\nwant %s", second, first)
			}
		})
	}
}

// TestParseGPUBatch spells out the key facts of the GPU job, so that a
// wrong golden file cannot hide them.
func TestParseGPUBatch(t *testing.T) {
	job, err := ParseFile("testdata/gpu-batch.hcl")
	if err != nil {
		t.Fatal(err)
	}
	tg := job.TaskGroups[0]
	task := tg.Tasks[0]
	dev := task.Resources.Devices[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"type", job.Type, structs.JobTypeBatch},
		{"namespace default", job.Namespace, structs.DefaultNamespace},
		{"job constraint", *job.Constraints[0], structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		{"absent count is 1", tg.Count, 1},
		{"batch restart default", *tg.RestartPolicy, *structs.DefaultRestartPolicy(structs.JobTypeBatch)},
		{"memory 16 GiB in MB", task.Resources.MemoryMB, 16384},
		{"kill timeout", task.KillTimeout, 30 * time.Second},
		{"config args number", task.Config["args"], []any{"train.py", "--epochs", 3}},
		{"device count", dev.Count, uint64(2)},
		{"device topology", dev.Topology, "nvlink"},
		{"device constraint", *dev.Constraints[0], structs.Constraint{LTarget: "${device.attr.memory}", RTarget: "40 GiB", Operand: ">="}},
		{"device affinity", *dev.Affinities[0], structs.Affinity{LTarget: "${device.model}", RTarget: "H100", Operand: "regexp", Weight: 75}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			got, _ := json.Marshal(c.got)
			want, _ := json.Marshal(c.want)
			if !bytes.Equal(got, want) {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

// TestInterpolationsKept checks that ${...} survives everywhere a string
// can appear.
func TestInterpolationsKept(t *testing.T) {
	job, err := ParseFile("testdata/interpolation.hcl")
	if err != nil {
		t.Fatal(err)
	}
	task := job.TaskGroups[0].Tasks[0]
	nested := task.Config["nested"].(map[string]any)
	tests := []struct {
		name      string
		got, want any
	}{
		{"args", task.Config["args"].([]any)[1], "echo $NVIDIA_VISIBLE_DEVICES ${NOMAD_TASK_NAME} in ${ NOMAD_ALLOC_ID }"},
		{"escapes", task.Config["escaped"], "literal ${not_interpolated} and \"quotes\"\ttab"},
		{"heredoc", task.Config["script"], "#!/bin/sh\necho \"${NOMAD_ALLOC_DIR}/${NOMAD_TASK_NAME}\"\n"},
		{"nested list", nested["list"].([]any)[2], "${attr.unique.hostname}"},
		{"two in a row", nested["dotted.key"], "${meta.rack}x${node.class}"},
		{"block in config", task.Config["mount"].([]any)[0].(map[string]any)["target"], "/mnt/${NOMAD_JOB_NAME}"},
		{"env", task.Env["GPU_IDS"], "${NOMAD_ALLOC_ID}-${device.ids}"},
		{"constraint", task.Constraints[0].LTarget, "${attr.driver.raw_exec}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}
}

func TestParseJSONDetection(t *testing.T) {
	src := []byte(`{"ID": "j", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`)
	tests := []struct {
		name     string
		filename string
		src      []byte
	}{
		{"by content", "job.hcl", src},
		{"by extension", "job.json", append([]byte("\n\t "), src...)},
		{"wrapped", "job", []byte(`{"Job": ` + string(src) + `}`)},
		{"lower-case wrapper", "job", []byte(`{"job": ` + string(src) + `}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, err := Parse(tt.filename, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if job.ID != "j" || job.TaskGroups[0].Count != 1 || job.TaskGroups[0].Tasks[0].Resources.CPU != 100 {
				t.Errorf("got ID %q count %d cpu %d, want j, 1 (defaulted), 100 (canonicalized)",
					job.ID, job.TaskGroups[0].Count, job.TaskGroups[0].Tasks[0].Resources.CPU)
			}
		})
	}
}

func TestParseFileMissing(t *testing.T) {
	_, err := ParseFile(filepath.Join(t.TempDir(), "nope.hcl"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want an error wrapping os.ErrNotExist", err)
	}
}

func TestErrorsAs(t *testing.T) {
	_, err := Parse("job.hcl", []byte("job \"x\" {\n  bogus = 1\n  other = 2\n}\n"))
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("got %T, want Errors", err)
	}
	if len(es) != 2 || es[0].Line != 2 || es[1].Line != 3 {
		t.Fatalf("got %v, want two errors on lines 2 and 3 in order", es)
	}
	var one *Error
	if !errors.As(err, &one) || one.Column != 3 {
		t.Errorf("got %+v, want the first *Error at column 3", one)
	}
}

// TestConfigValues checks how HCL values land in the driver config.
func TestConfigValues(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want any
	}{
		{"int", `1500`, 1500},
		{"exponent is whole", `1.5e3`, 1500},
		{"float", `2.5`, 2.5},
		{"huge", `1e30`, 1e30},
		{"negative", `-3`, -3},
		{"arithmetic", `2 * 21`, 42},
		{"bool", `false`, false},
		{"null", `null`, nil},
		{"for list", `[for s in ["a", "b"] : s]`, []any{"a", "b"}},
		{"for object", `{for k in ["a"] : k => 1}`, map[string]any{"a": 1}},
		{"conditional", `true ? "y" : "n"`, "y"},
		{"parentheses", `("${NOMAD_TASK_NAME}")`, "${NOMAD_TASK_NAME}"},
		{"quoted key", `{ "${x}" = 1, 2 = "two" }`, map[string]any{"${x}": 1, "2": "two"}},
		{"escapes", `"tab\tnewline\nunicode\u00e9"`, "tab\tnewline\nunicode\u00e9"},
		{"strip markers", `"a ${~ b ~}  c"`, "a${~ b ~}c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, err := Parse("job.hcl", []byte(inTask("config = { v = "+tt.expr+" }")))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(job.TaskGroups[0].Tasks[0].Config["v"])
			want, _ := json.Marshal(tt.want)
			if !bytes.Equal(got, want) {
				t.Errorf("got %s (%T), want %s", got, job.TaskGroups[0].Tasks[0].Config["v"], want)
			}
			if _, wantInt := tt.want.(int); wantInt {
				if _, gotInt := job.TaskGroups[0].Tasks[0].Config["v"].(int); !gotInt {
					t.Errorf("got %T, want int", job.TaskGroups[0].Tasks[0].Config["v"])
				}
			}
		})
	}
}

func TestConfigForms(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // error prefix, or "" for success
	}{
		{"attribute", `config = { command = "x" }`, ""},
		{"block", "config {\n        command = \"x\"\n      }", ""},
		{"both", "config = { command = \"x\" }\n      config {\n      }", "job.hcl:7,7: Duplicate config block"},
		{"two blocks", "config {\n      }\n      config {\n      }", "job.hcl:8,7: Duplicate config block"},
		{"not an object", `config = "x"`, "job.hcl:6,16: Incorrect attribute value type"},
		{"attribute and block inside", "config {\n        mount = 1\n        mount {\n        }\n      }", "job.hcl:8,9: Duplicate config key"},
		{"unknown function", `config = { a = nosuch("x") }`, "job.hcl:6,22: Call to unknown function"},
		{"duplicate key", `config = { a = 1, a = 2 }`, "job.hcl:6,25: Duplicate object attribute"},
		{"bad bool", "constraint {\n        distinct_hosts = \"yes\"\n      }", "job.hcl:7,26: Incorrect attribute value type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.hcl", []byte(inTask(tt.body)))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want success", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("got %v, want prefix %q", err, tt.want)
			}
		})
	}
}
