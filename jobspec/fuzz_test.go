package jobspec

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse, as HCL and as JSON. It must
// never panic; a job comes back valid, or an error that names the file.
func FuzzParse(f *testing.F) {
	for _, path := range goldenInputs(f) {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	for _, src := range []string{
		inDevice(`memory = "20 GiB"` + "\n" + `compute = "25%"`),
		inTask(`config { args = ["${a}${b}", "$${c}", "%{ if x }y%{ endif }"] }`),
		inTask(`env = { "${k}" = "${v ~}  w" }`),
		`{"Job": {"ID": "x", "TaskGroups": [{"Tasks": [null]}]}}`,
		`{"ID": "x", "TaskGroups": [{"Name": "g", "Tasks": [{"Resources": {"Devices": [null]}}]}]}`,
		`{"Job": {"TaskGroups": [{"Tasks": [{"Config": {"a": [1e400]}}]}]}}`,
		`job "x" { group "g" { count = 1000000000 } }`,
		inDevice(`count = 0`),
		inTask(`config { args = ` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + ` }`),
		inTask(`config { args = "` + strings.Repeat("${", 70) + `x` + strings.Repeat("}", 70) + `" }`),
		`{"Job": {"ID": "x", "TaskGroups": [{"Tasks": [{"Resources": {"Devices": [{"Count": 9223372036854775808}]}}]}]}}`,
		varJob("variable \"n\" {\n  type = number\n  default = 3\n}\nlocals {\n  l = range(var.n)\n}\n", `join(",", [for i in local.l : format("%02d", i)])`),
		varJob("locals {\n  a = local.b\n  b = [local.a]\n}\n", `"${local.a}"`),
		varJob("locals {\n"+doublingLocals(24)+"}\n", `"${local.l24}${local.l24}"`),
		varJob("locals {\n  r = range(1000)\n}\n", `length([for a in local.r : [for b in local.r : b]])`),
		varJob("", `"%{ for s in ["a"] }${s}-${node.unique.name}%{ endfor }"`),
		varJob("", `templatefile("x", {})`),
		varJob("", `"a${1e999999999}b"`),
		varJob("", `tostring(1e-999999999)`),
		`{"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "RestartPolicy": null, "Tasks": [{"Name": "t", "restartpolicy": {"Attempts": 2, "X": [1]}}]}]}}`,
		`{"Job": {"ID": "x", "Periodic": {"Spec": "* * * * *"}, "TaskGroups": [{"EphemeralDisk": {"SizeMB": 300, "Sticky": false, "Migrate": false}}]}, "Submission": {"Source": "x"}}`,
	} {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, name := range []string{"fuzz.hcl", "fuzz.json"} {
			job, err := Parse(name, []byte(src))
			switch {
			case err != nil && job != nil:
				t.Fatalf("%s: got a job and an error %v", name, err)
			case err != nil && !strings.HasPrefix(err.Error(), name):
				t.Fatalf("%s: error %q does not start with the file name", name, err)
			case err == nil && job == nil:
				t.Fatalf("%s: got neither a job nor an error", name)
			case err == nil:
				if verr := job.Validate(); verr != nil {
					t.Fatalf("%s: parsed job does not validate: %v", name, verr)
				}
			}
		}
	})
}
