package jobspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// varJob is a job whose task env shows the values under test: env.V is
// the expression given.
func varJob(decls, expr string) string {
	return decls + "\njob \"x\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      env { V = " + expr + " }\n    }\n  }\n}\n"
}

func TestVariableSources(t *testing.T) {
	const decl = `variable "v" {
  type    = string
  default = "default"
}
variable "n" {
  type    = list(number)
  default = [1]
}
`
	tests := []struct {
		name string
		expr string
		opts Options
		want string
	}{
		{"default", `var.v`, Options{}, "default"},
		{"nomad env", `var.v`, Options{Env: []string{"NOMAD_VAR_v=env"}}, "env"},
		{"drover env over nomad env", `var.v`, Options{Env: []string{"DROVER_VAR_v=drover", "NOMAD_VAR_v=nomad"}}, "drover"},
		{"var file over env", `var.v`, Options{Env: []string{"NOMAD_VAR_v=env"}, VarFiles: []VarFile{{Name: "a.hcl", Src: []byte(`v = "file"`)}}}, "file"},
		{"later var file wins", `var.v`, Options{VarFiles: []VarFile{{Name: "a.hcl", Src: []byte(`v = "a"`)}, {Name: "b.json", Src: []byte(`{"v": "b"}`)}}}, "b"},
		{"-var over files", `var.v`, Options{Vars: []string{"v=flag"}, VarFiles: []VarFile{{Name: "a.hcl", Src: []byte(`v = "file"`)}}}, "flag"},
		{"later -var wins", `var.v`, Options{Vars: []string{"v=one", "v=two=2"}}, "two=2"},
		{"list from -var", `join("+", var.n)`, Options{Vars: []string{"n=[1, 2, 3]"}}, "1+2+3"},
		{"list from env", `join("+", var.n)`, Options{Env: []string{"NOMAD_VAR_n=[4,5]"}}, "4+5"},
		{"undeclared env ignored", `var.v`, Options{Env: []string{"NOMAD_VAR_other=x"}}, "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, err := ParseWith("job.hcl", []byte(varJob(decl, tt.expr)), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := job.TaskGroups[0].Tasks[0].Env["V"]; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFunctions(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{`format("%s-%03d", "a", 7)`, "a-007"},
		{`join(",", formatlist("x%s", ["a", "b"]))`, "xa,xb"},
		{`jsonencode({a = [1, true]})`, `{"a":[1,true]}`},
		{`jsondecode("{\"k\": \"v\"}").k`, "v"},
		{`base64decode(base64encode("héllo"))`, "héllo"},
		{`md5("abc")`, "900150983cd24fb0d6963f7d28e17f72"},
		{`sha1("abc")`, "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{`substr(sha512("abc"), 0, 16)`, "ddaf35a193617aba"},
		{`strlen(uuidv4())`, "36"},
		{`length("héllo") + length([1, 2])`, "7"},
		{`regex_replace("a1b22", "[0-9]+", "#")`, "a#b#"},
		{`replace("a-b-c", "-", "_")`, "a_b_c"},
		{`title(lower("HELLO world"))`, "Hello World"},
		{`trimsuffix(trimprefix(trimspace("  pre-x-suf "), "pre-"), "-suf")`, "x"},
		{`join(",", sort(distinct(concat(["b", "a"], ["a", "c"]))))`, "a,b,c"},
		{`join(",", keys(merge({a = 1}, {b = 2})))`, "a,b"},
		{`lookup({a = "1"}, "b", "dflt")`, "dflt"},
		{`element(reverse(range(3)), 0)`, "2"},
		{`length(flatten([[1], [2, [3]]]))`, "3"},
		{`zipmap(["k"], ["v"]).k`, "v"},
		{`coalesce("", "x")`, "x"},
		{`join(",", compact(["a", "", "b"]))`, "a,b"},
		{`tostring(max(1, 5) + min(2, 3) + abs(-1) + ceil(1.2) + floor(1.8))`, "11"},
		{`contains(tolist(setunion(["a"], ["b"])), "b")`, "true"},
		{`join(",", slice(split(",", "a,b,c"), 1, 3))`, "b,c"},
		{`can(tonumber("x"))`, "false"},
		{`try(tonumber("x"), "fallback")`, "fallback"},
		{`tobool("true")`, "true"},
		{`length(tomap({a = "1"})) + length(toset(["a", "a"]))`, "2"},
		{`formatdate("YYYY-MM-DD", timeadd("2024-01-31T00:00:00Z", "24h"))`, "2024-02-01"},
		{`regex("v([0-9]+)", "v42")[0]`, "42"},
		{`"%{ for s in ["a", "b"] }${s}%{ endfor }"`, "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			job, err := Parse("job.hcl", []byte(varJob("", tt.expr)))
			if err != nil {
				t.Fatal(err)
			}
			if got := job.TaskGroups[0].Tasks[0].Env["V"]; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFileFunctions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("motd.txt", "hello\n")
	write("conf.tpl", "%{ for p in ports }listen ${p}\n%{ endfor }name=${upper(name)}")
	write("big.txt", strings.Repeat("x", maxFileBytes+1))
	tests := []struct {
		expr, want, wantErr string
	}{
		{expr: `file("motd.txt")`, want: "hello\n"},
		{expr: `tostring(fileexists("motd.txt"))`, want: "true"},
		{expr: `tostring(fileexists("nope.txt"))`, want: "false"},
		{expr: `templatefile("conf.tpl", { ports = [80, 81], name = "web" })`, want: "listen 80\nlisten 81\nname=WEB"},
		{expr: `file("big.txt")`, wantErr: "big.txt is larger than 4 MiB"},
		{expr: `file("missing.txt")`, wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			path := filepath.Join(dir, "job.hcl")
			write("job.hcl", varJob("", tt.expr))
			job, err := ParseFile(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), path+":6,") {
					t.Fatalf("got %v, want an error at %s:6 containing %q", err, path, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := job.TaskGroups[0].Tasks[0].Env["V"]; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	// Without a file directory (the agent's /v1/jobs/parse), no file is read.
	_, err := Parse("job.hcl", []byte(varJob("", `file("/etc/hostname")`)))
	if err == nil || !strings.Contains(err.Error(), "file functions are available only") {
		t.Errorf("got %v, want file functions refused", err)
	}
}

// TestVariableErrors checks every refusal of variables and locals: the
// first line of the error, with its position.
func TestVariableErrors(t *testing.T) {
	sensitive := "variable \"token\" {\n  type = number\n  sensitive = true\n}\n"
	tests := []struct {
		name string
		src  string
		opts Options
		want string
	}{
		{"undeclared -var", varJob("", `"x"`), Options{Vars: []string{"nope=1"}},
			`job.hcl: Undeclared variable; -var nope: the job file declares no variable "nope".`},
		{"bad -var", varJob("", `"x"`), Options{Vars: []string{"novalue"}},
			`job.hcl: Invalid -var option; "novalue": want name=value.`},
		{"missing value", varJob("variable \"need\" {}\n", `var.need`), Options{},
			`job.hcl:1,1: Missing value for variable; var.need has no default and no value: set it with -var need=..., a -var-file, or NOMAD_VAR_need.`},
		{"conversion from -var", varJob("variable \"n\" {\n  type = number\n}\n", `var.n`), Options{Vars: []string{"n=abc"}},
			`job.hcl:1,1: Invalid value for variable; var.n (from -var n) is not a valid number expression.`},
		{"conversion of default", varJob("variable \"n\" {\n  type = number\n  default = \"abc\"\n}\n", `var.n`), Options{},
			`job.hcl:3,13: Invalid value for variable; var.n (from its default) must be number: a number is required.`},
		{"conversion in var file", varJob("variable \"l\" {\n  type = list(string)\n}\n", `var.l[0]`), Options{VarFiles: []VarFile{{Name: "vals.hcl", Src: []byte("\nl = 3\n")}}},
			`vals.hcl:2,5: Invalid value for variable; var.l (from vals.hcl:2) must be list of string: list of string required, but have number.`},
		{"undeclared in var file", varJob("", `"x"`), Options{VarFiles: []VarFile{{Name: "vals.json", Src: []byte(`{"zz": 1}`)}}},
			`vals.json:1,2: Undeclared variable; The var file sets "zz", which the job file does not declare.`},
		{"sensitive value hidden", varJob(sensitive, `tostring(var.token)`), Options{Vars: []string{"token=[\"s3cret\"]"}},
			`job.hcl:1,1: Invalid value for variable; var.token (from -var token) must be number: the value (sensitive, not shown) does not convert.`},
		{"validation", varJob("variable \"r\" {\n  type = number\n  validation {\n    condition = var.r > 0\n    error_message = \"r must be positive.\"\n  }\n}\n", `var.r`), Options{Vars: []string{"r=-1"}},
			`job.hcl:4,17: Invalid value for variable; var.r (from -var r): r must be positive.`},
		{"validation of another variable", varJob("variable \"a\" {\n  default = 1\n  validation {\n    condition = var.b > 0\n    error_message = \"x\"\n  }\n}\n", `"x"`), Options{},
			`job.hcl:4,17: Invalid validation condition; The condition of var.a may refer only to var.a.`},
		{"duplicate variable", varJob("variable \"a\" {\n  default = 1\n}\nvariables {\n  a = 2\n}\n", `"x"`), Options{},
			`job.hcl:5,3: Duplicate variable; A variable named "a" is already declared at line 1.`},
		{"undeclared reference", varJob("", `var.missing`), Options{},
			`job.hcl:6,17: Undeclared variable; var.missing is not declared: add a variable "missing" { } block.`},
		{"undefined local", varJob("", `"${local.nope}"`), Options{},
			`job.hcl:6,20: Undefined local; local.nope is not defined in any locals block.`},
		{"local cycle", varJob("locals {\n  a = local.b\n  b = \"${local.a}\"\n}\n", `local.a`), Options{},
			`job.hcl:2,3: Cycle in locals; local.a depends on itself through local.b, local.a.`},
		{"local self reference", varJob("locals {\n  a = [local.a]\n}\n", `"x"`), Options{},
			`job.hcl:2,3: Cycle in locals; local.a depends on itself through local.a.`},
		{"duplicate local", varJob("locals {\n  a = 1\n}\nlocals {\n  a = 2\n}\n", `"x"`), Options{},
			`job.hcl:5,3: Duplicate local; local.a is already defined at line 2.`},
		{"runtime value outside a string", varJob("", `node.unique.name`), Options{},
			`job.hcl:6,17: Runtime value outside a string; "node" is known only when the task runs`},
		{"range too long", varJob("", `join(",", range(100000))`), Options{},
			`job.hcl:6,27: Error in function call; Call to function "range" failed: more than 1024 values were generated`},
		{"format width", varJob("", `format("%999999999d", 1)`), Options{},
			`job.hcl:6,17: Error in function call; Call to function "format" failed: format: width or precision above 10000.`},
		{"nested loops", varJob("locals {\n  r = range(1000)\n}\n", `length([for a in local.r : [for b in local.r : [for c in local.r : c]]])`), Options{},
			`job.hcl:9,54: Expression too costly; for expressions iterate more than 200000 times in all.`},
		{"doubling locals", varJob("locals {\n"+doublingLocals(30)+"}\n", `local.l30`), Options{},
			`job.hcl:`},
		{"replace growth", varJob("locals {\n  a = join(\"\", [for i in range(1000) : \"aaaaaaaaaa\"])\n}\n", `replace(local.a, "a", local.a)`), Options{},
			`job.hcl:9,17: Error in function call; Call to function "replace" failed: replace: result could be larger than 4 MiB.`},
		{"huge number printed", varJob("", `"a${1e99999999}"`), Options{},
			`job.hcl:6,21: Number out of range; the number is too large or too small (binary exponent 332192807, at most 4096).`},
		{"huge number computed", varJob("locals {\n  a = 1e1000\n  b = local.a * local.a\n  c = local.b * local.b\n}\n", `"${local.c}"`), Options{},
			`job.hcl:3,7: Number out of range; local.b: the number is too large or too small (binary exponent 6644, at most 4096).`},
		{"huge number from -var", varJob("variable \"s\" {\n  type = string\n}\n", `var.s`), Options{Vars: []string{"s=x"}, VarFiles: []VarFile{{Name: "v.hcl", Src: []byte("s = 1e99999999")}}},
			`v.hcl:1,5: Invalid value for variable; var.s (from v.hcl:1) must be string: the number is too large`},
		{"huge number to a function", varJob("", `tostring(1e99999999)`), Options{},
			`job.hcl:6,26: Number out of range; the number is too large`},
		{"huge number from a function", varJob("", `upper(tonumber("1e5000"))`), Options{},
			`job.hcl:6,23: Error in function call; Call to function "tonumber" failed: tonumber: the number is too large`},
		{"json job with -var", `{"ID": "x"}`, Options{Vars: []string{"a=1"}},
			`job.hcl: Variables in a JSON job; -var and -var-file apply to HCL job files only.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, err := ParseWith("job.hcl", []byte(tt.src), tt.opts)
			if err == nil {
				t.Fatalf("got job %+v and no error, want %q", job, tt.want)
			}
			first := strings.SplitN(err.Error(), "\n", 2)[0]
			if !strings.HasPrefix(first, tt.want) {
				t.Errorf("got  %q\nwant %q", first, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error shows a sensitive value: %v", err)
			}
		})
	}
}

// doublingLocals defines l0 = "xxxxxxxx" and each next local as twice
// the one before: 8 << n bytes for ln.
func doublingLocals(n int) string {
	var b strings.Builder
	b.WriteString("  l0 = \"xxxxxxxx\"\n")
	for i := 1; i <= n; i++ {
		b.WriteString("  l" + itoa(i) + " = \"${local.l" + itoa(i-1) + "}${local.l" + itoa(i-1) + "}\"\n")
	}
	return b.String()
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return fmtInt(i/10) + string(rune('0'+i%10))
}
