package jobspec

import (
	"fmt"
	"strings"
	"testing"
)

// inTask places body lines inside task "t" of a valid job, starting at
// line 6, column 7.
func inTask(body string) string {
	return "job \"x\" {\n" + // 1
		"  datacenters = [\"dc1\"]\n" + // 2
		"  group \"g\" {\n" + // 3
		"    task \"t\" {\n" + // 4
		"      driver = \"raw_exec\"\n" + // 5
		"      " + body + "\n" + // 6
		"    }\n  }\n}\n"
}

// inResources places body lines inside the task's resources block,
// starting at line 7, column 9.
func inResources(body string) string {
	return inTask("resources {\n        " + body + "\n      }")
}

// inDevice places body lines inside a device "nvidia/gpu" block, starting
// at line 8, column 11.
func inDevice(body string) string {
	return inResources("device \"nvidia/gpu\" {\n          " + body + "\n        }")
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		// want is the whole first line of the error, or its start when it
		// ends with "...".
		want string
	}{
		{
			name: "syntax error",
			src:  "job \"x\" {\n  type = \n}\n",
			want: "job.hcl:2,10: Invalid expression; ...",
		},
		{
			name: "unclosed block",
			src:  "job \"x\" {\n  group \"g\" {\n",
			want: "job.hcl:2,13: Unclosed configuration block; ...",
		},
		{
			name: "unknown attribute",
			src:  inResources("cpus = 2"),
			want: `job.hcl:7,9: Unsupported argument; An argument named "cpus" is not expected here. Did you mean "cpu"?`,
		},
		{
			name: "gang min above count",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    count = 2\n    gang {\n      min = 3\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n",
			want: `job.hcl:5,5: Invalid gang block; gang min 3 exceeds the group's count 2.`,
		},
		{
			name: "gang without min",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    count = 2\n    gang {\n      timeout = \"10m\"\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n",
			want: `job.hcl:5,5: Missing gang min; A gang block needs min: how many of the group's allocations must be placed together.`,
		},
		{
			name: "gang bad timeout",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    count = 2\n    gang {\n      min = 1\n      timeout = \"soon\"\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n",
			want: "job.hcl:7,17: ...",
		},
		{
			name: "gang network bad level",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    count = 2\n    gang {\n      min = 2\n      network {\n        level = \"row\"\n      }\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n",
			want: `job.hcl:8,17: Invalid value; level = "row" is not one of block, rack, spine.`,
		},
		{
			name: "gang network bad mode",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    count = 2\n    gang {\n      min = 2\n      network {\n        level = \"rack\"\n        mode = \"strict\"\n      }\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n",
			want: `job.hcl:9,16: Invalid value; mode = "strict" is not one of required, preferred.`,
		},
		{
			name: "gang network without level",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    count = 2\n    gang {\n      min = 2\n      network {\n        mode = \"preferred\"\n      }\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n",
			want: `job.hcl:7,7: Missing gang network level; A gang network block needs level: one of block, rack, spine.`,
		},
		{
			name: "unknown block",
			src:  inTask("resource {\n      }"),
			want: `job.hcl:6,7: Unsupported block type; Blocks of type "resource" are not expected here. Did you mean "resources"?`,
		},
		{
			name: "logs max_files zero",
			src:  inTask("logs {\n        max_files = 0\n      }"),
			want: "job.hcl:7,21: Invalid value; max_files = 0 is out of range: want at least 1.",
		},
		{
			name: "logs max_file_size negative",
			src:  inTask("logs {\n        max_file_size = -5\n      }"),
			want: "job.hcl:7,25: Invalid value; max_file_size = -5 is out of range: want at least 1.",
		},
		{
			name: "logs max_files not a number",
			src:  inTask("logs {\n        max_files = \"many\"\n      }"),
			want: `job.hcl:7,21: Incorrect attribute value type; Inappropriate value for attribute "max_files": a whole number is required, not "many".`,
		},
		{
			name: "logs unknown argument",
			src:  inTask("logs {\n        max_file = 5\n      }"),
			want: `job.hcl:7,9: Unsupported argument; An argument named "max_file" is not expected here. Did you mean "max_files"?`,
		},
		{
			name: "iops not supported",
			src:  inResources("iops = 5"),
			want: `job.hcl:7,9: Unsupported argument; The argument "iops" is not supported by Drover yet.`,
		},
		{
			name: "two logs blocks",
			src:  inTask("logs {\n      }\n      logs {\n      }"),
			want: "job.hcl:8,7: Duplicate logs block; ...",
		},
		{
			name: "nomad block not supported yet",
			src:  inResources("numa {\n        }"),
			want: `job.hcl:7,9: Unsupported block type; Blocks of type "numa" (Nomad Enterprise's NUMA-aware core placement) are not supported by Drover; ...`,
		},
		{
			name: "nomad argument not supported yet",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  vault_token = \"x\"\n}\n",
			want: `job.hcl:3,3: Unsupported argument; The argument "vault_token" is not supported by Drover yet.`,
		},
		{
			name: "bad duration",
			src:  inTask(`kill_timeout = "30 parsecs"`),
			want: `job.hcl:6,22: Invalid duration; kill_timeout = "30 parsecs" is not a duration ...`,
		},
		{
			name: "bad size unit",
			src:  inResources(`memory = "40 GiBs"`),
			want: `job.hcl:7,18: Invalid size; memory = "40 GiBs" is not a size ...`,
		},
		{
			name: "bad device memory unit",
			src:  inDevice(`memory = "20 GHz"`),
			want: `job.hcl:8,20: Invalid size; memory = "20 GHz" is not a size ...`,
		},
		{
			name: "missing driver",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    task \"t\" {\n    }\n  }\n}\n",
			want: `job.hcl:4,5: Missing required argument; The argument "driver" is required in task "t", but no definition was found.`,
		},
		{
			name: "bad operator",
			src:  inTask("constraint {\n        attribute = \"${attr.kernel.name}\"\n        operator  = \"~=\"\n        value     = \"linux\"\n      }"),
			want: `job.hcl:8,21: Invalid constraint; constraint "${attr.kernel.name} ~= linux": unknown operator "~=".`,
		},
		{
			name: "bad regexp",
			src:  inTask("affinity {\n        attribute = \"${node.class}\"\n        regexp = \"(\"\n      }"),
			want: `job.hcl:8,18: Invalid affinity; affinity: constraint "${node.class} regexp (": bad regexp: ...`,
		},
		{
			name: "conflicting shorthand",
			src:  inTask("constraint {\n        attribute = \"${attr.os.version}\"\n        operator = \"=\"\n        version = \">= 1\"\n      }"),
			want: `job.hcl:9,9: Conflicting operators; "version" sets the operator, so operator = "=" is not allowed too.`,
		},
		{
			name: "bad topology",
			src:  inDevice(`topology = "pcie"`),
			want: `job.hcl:8,22: Invalid value; topology = "pcie" is not one of any, nvlink, numa.`,
		},
		{
			name: "bad device name",
			src:  inResources("device \"nvidia//x\" {\n        }"),
			want: `job.hcl:7,16: Invalid device name; device name "nvidia//x": want <type>, <vendor>/<type> or <vendor>/<type>/<model>.`,
		},
		{
			name: "fractional count",
			src:  inDevice("count = 2\n          compute = 50"),
			want: `job.hcl:8,19: Invalid device request; A fractional request (memory or compute) asks for a slice of one device, so count must be 1, not 2.`,
		},
		{
			name: "compute out of range",
			src:  inDevice(`compute = "150%"`),
			want: `job.hcl:8,21: Invalid value; compute = 150 is out of range: want between 1 and 100.`,
		},
		{
			name: "affinity weight zero",
			src:  inTask("affinity {\n        attribute = \"${node.class}\"\n        value = \"a\"\n        weight = 0\n      }"),
			want: `job.hcl:9,18: Invalid value; weight = 0 has no effect: ...`,
		},
		{
			name: "negative count",
			src:  "job \"x\" {\n  group \"g\" {\n    count = -1\n    task \"t\" { driver = \"d\" }\n  }\n}\n",
			want: `job.hcl:3,13: Invalid value; count = -1 is out of range: want at least 0.`,
		},
		{
			name: "count not a number",
			src:  "job \"x\" {\n  group \"g\" {\n    count = \"two\"\n    task \"t\" { driver = \"d\" }\n  }\n}\n",
			want: `job.hcl:3,13: Incorrect attribute value type; Inappropriate value for attribute "count": a whole number is required, not "two".`,
		},
		{
			name: "group without task",
			src:  "job \"x\" {\n  group \"g\" {\n  }\n}\n",
			want: `job.hcl:2,3: Missing task; Group "g" must define at least one task block.`,
		},
		{
			name: "datacenters not a list",
			src:  "job \"x\" {\n  datacenters = \"dc1\"\n}\n",
			want: `job.hcl:2,17: Incorrect attribute value type; Inappropriate value for attribute "datacenters": a list of strings is required.`,
		},
		{
			name: "variables outside strings",
			src:  inTask("kill_signal = var.signal"),
			want: `job.hcl:6,21: Undeclared variable; var.signal is not declared: add a variable "signal" { } block.`,
		},
		{
			name: "template directive",
			src:  inTask(`env { A = "%{ if node.class == "x" }x%{ endif }" }`),
			want: `job.hcl:6,18: Unsupported template directive; ...`,
		},
		{
			name: "bad job type",
			src:  "job \"x\" {\n  type = \"cron\"\n}\n",
			want: `job.hcl:2,10: Invalid value; type = "cron" is not one of service, batch, system, sysbatch.`,
		},
		{
			name: "duplicate group",
			src:  "job \"x\" {\n  group \"g\" {\n    task \"t\" { driver = \"d\" }\n  }\n  group \"g\" {\n    task \"t\" { driver = \"d\" }\n  }\n}\n",
			want: `job.hcl:5,9: Duplicate group; A group named "g" is already defined at line 2.`,
		},
		{
			name: "duplicate resources",
			src:  inTask("resources {}\n      resources {}"),
			want: `job.hcl:7,7: Duplicate resources block; Only one resources block is allowed here; the first is at line 6.`,
		},
		{
			name: "no job",
			src:  "# nothing here\n",
			want: `job.hcl:1,1: Missing job block; ...`,
		},
		{
			name: "two jobs",
			src:  "job \"a\" {}\njob \"b\" {}\n",
			want: `job.hcl:2,1: Duplicate job block; A job file defines one job; the first is at line 1.`,
		},
		{
			name: "missing job label",
			src:  "job {\n}\n",
			want: `job.hcl:1,5: Missing id for job; All job blocks must have 1 labels (id).`,
		},
		{
			name: "variable block",
			src:  "variable \"x\" {}\njob \"a\" {}\n",
			want: `job.hcl:1,1: Missing value for variable; var.x has no default and no value: set it with -var x=..., a -var-file, or NOMAD_VAR_x.`,
		},
		{
			name: "validation at the job",
			src:  "\n\njob \"x\" {\n  max_run_time = \"1h\"\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n",
			want: `job.hcl:3,1: Invalid job; job "x": max_run_time is for batch jobs (a service job runs until stopped)`,
		},
		{
			name: "meta block and attribute",
			src:  "job \"x\" {\n  meta = { a = 1 }\n  meta {\n  }\n}\n",
			want: `job.hcl:3,3: Duplicate meta block; Only one meta block (or meta attribute) is allowed here.`,
		},
		{
			name: "list in env",
			src:  inTask(`env = { A = [1] }`),
			want: `job.hcl:6,13: Incorrect attribute value type; Inappropriate value for env.A: a string is required.`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFirstError(t, "job.hcl", tt.src, tt.want)
		})
	}
}

func TestParseJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "syntax error",
			src:  "{\n  \"ID\": \"x\",\n  \"Type\": batch\n}",
			want: "job.json:3,11: Invalid JSON; invalid character 'b' looking for beginning of value",
		},
		{
			name: "truncated",
			src:  "{\n  \"ID\": \"x\",",
			want: "job.json:2,13: Invalid JSON; Unexpected end of input.",
		},
		{
			name: "not an object",
			src:  "\n  [1, 2]",
			want: `job.json:2,3: Invalid JSON job; ...`,
		},
		{
			name: "unknown field",
			src:  "{\n  \"ID\": \"x\",\n  \"TaskGroups\": [{\"Name\": \"g\", \"Consul\": {\"Namespace\": \"x\"}}]\n}",
			want: `job.json:3,32: Unsupported field; Job.TaskGroups[0]: Nomad's field "Consul" is not supported by Drover yet; remove it or leave it empty.`,
		},
		{
			name: "unknown wrapper field",
			src:  "{\"Job\": {\"ID\": \"x\"}, \"PolicyOverride\": true}",
			want: `job.json:1,22: Unsupported field; the request: Nomad's field "PolicyOverride" is not supported by Drover yet; remove it or leave it empty.`,
		},
		{
			name: "wrong type",
			src:  "{\n  \"ID\": \"x\",\n  \"Priority\": \"high\"\n}",
			want: `job.json:3,15: Invalid value; cannot unmarshal string into Go struct field Job.Priority of type int`,
		},
		{
			name: "null group",
			src:  "{\"Job\":\n {\"ID\": \"x\", \"Datacenters\": [\"dc1\"], \"TaskGroups\": [null]}}",
			want: `job.json:2,2: Invalid job; TaskGroups must not contain null`,
		},
		{
			name: "null job",
			src:  "{\"Job\": null}",
			want: `job.json:1,9: Missing job; ...`,
		},
		{
			name: "trailing data",
			src:  "{\"ID\": \"x\"} {}",
			want: `job.json:1,13: Invalid JSON; ...`,
		},
		{
			name: "validation",
			src:  "{\"Job\": {\"ID\": \"x\", \"Datacenters\": [\"dc1\"]}}",
			want: `job.json:1,9: Invalid job; job "x": missing task group`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFirstError(t, "job.json", tt.src, tt.want)
		})
	}
}

// assertFirstError parses src and checks the first line of the error.
func assertFirstError(t *testing.T, filename, src, want string) {
	t.Helper()
	job, err := Parse(filename, []byte(src))
	if err == nil {
		t.Fatalf("got job %+v and no error, want %q", job, want)
	}
	if job != nil {
		t.Errorf("got a job together with an error")
	}
	got, _, _ := strings.Cut(err.Error(), "\n")
	if prefix, ok := strings.CutSuffix(want, "..."); ok {
		if !strings.HasPrefix(got, prefix) {
			t.Errorf("got  %q\nwant %q", got, want)
		}
		return
	}
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestAllErrorsReported checks that one parse reports every problem, in
// source order, each with its own position.
func TestAllErrorsReported(t *testing.T) {
	src := inResources("cpu = -1\n        memory = \"lots\"\n        cores = 2")
	_, err := Parse("job.hcl", []byte(src))
	if err == nil {
		t.Fatal("got no error")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"job.hcl:7,15: Invalid value", "job.hcl:8,18: Invalid size", "job.hcl:9,9: Unsupported argument"}
	if len(lines) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d: got %q, want prefix %q", i, lines[i], w)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Filename: "a.hcl", Line: 3, Column: 7, Summary: "S", Detail: "D."}, "a.hcl:3,7: S; D."},
		{&Error{Filename: "a.hcl", Line: 3, Column: 7, Summary: "S"}, "a.hcl:3,7: S"},
		{&Error{Filename: "a.hcl", Summary: "S"}, "a.hcl: S"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got, want := (Errors{tests[0].err, tests[1].err}).Error(), fmt.Sprintf("%s\n%s", tests[0].want, tests[1].want); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestValidationErrorsKeepContext checks that every problem Job.Validate
// finds is its own error with the full path to it.
func TestValidationErrorsKeepContext(t *testing.T) {
	src := `{"ID": "x", "Datacenters": [], "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "a"},
  {"Name": "b", "Resources": {"Devices": [{"Name": "gpu", "Count": 2, "MemoryMB": 10}]}}]}]}`
	_, err := Parse("job.json", []byte(src))
	if err == nil {
		t.Fatal("got no error")
	}
	want := strings.Join([]string{
		`job.json:1,1: Invalid job; job "x": group "g": task "a": missing driver`,
		`job.json:1,1: Invalid job; job "x": group "g": task "b": missing driver`,
		`job.json:1,1: Invalid job; job "x": group "g": task "b": device "gpu": a fractional request (memory or compute) must have count = 1, not 2`,
	}, "\n")
	if got := err.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
