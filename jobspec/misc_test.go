package jobspec

import (
	"strings"
	"testing"
)

// inJob places body lines inside the job, starting at line 3, column 3.
func inJob(body string) string {
	return "job \"x\" {\n" + // 1
		"  datacenters = [\"dc1\"]\n" + // 2
		"  " + body + "\n" + // 3
		"  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n"
}

// TestParseMiscErrors: each of the smaller Nomad blocks refuses bad
// input at its place, with what is wrong.
func TestParseMiscErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"scaling without max", inGroup("scaling {\n      min = 1\n    }"),
			`job.hcl:4,5: Missing scaling max; A scaling block needs max: the most allocations the group may be scaled to.`},
		{"scaling max below min", inGroup("scaling {\n      min = 3\n      max = 2\n    }"),
			`job.hcl:6,13: Invalid scaling block; max 2 must not be less than min 3.`},
		{"scaling negative min", inGroup("scaling {\n      min = -1\n      max = 2\n    }"),
			`job.hcl:5,13: Invalid value; min = -1 is out of range: want at least 0.`},
		{"scaling bad type", inGroup("scaling {\n      max = 2\n      type = \"vertical_cpu\"\n    }"),
			`job.hcl:6,14: Invalid value; type = "vertical_cpu" is not one of horizontal.`},
		{"count above scaling max", inGroup("count = 5\n    scaling {\n      max = 3\n    }"),
			`job.hcl:1,1: Invalid job; job "x": group "g": scaling: max 3 must not be less than min 5 (min defaults to the group's count)`},
		{"count below scaling min", inGroup("count = 1\n    scaling {\n      min = 2\n      max = 3\n    }"),
			`job.hcl:1,1: Invalid job; job "x": group "g": scaling: count 1 is outside the policy's bounds [2, 3]`},
		{"two scaling blocks", inGroup("scaling {\n      max = 3\n    }\n    scaling {\n      max = 3\n    }"),
			`job.hcl:7,5: Duplicate scaling block; ...`},
		{"task scaling is enterprise", inTask("scaling \"cpu\" {\n        max = 2000\n      }"),
			`job.hcl:6,7: Unsupported block type; A task's scaling "cpu" block is Nomad Enterprise's dynamic application sizing, which Drover does not have; ...`},
		{"ui link not http", inJob("ui {\n    link {\n      label = \"x\"\n      url = \"javascript:alert(1)\"\n    }\n  }"),
			`job.hcl:3,3: Invalid ui block; ui: link "x": url "javascript:alert(1)" must be an absolute http or https URL.`},
		{"ui link without label", inJob("ui {\n    link {\n      url = \"https://x.example\"\n    }\n  }"),
			`job.hcl:3,3: Invalid ui block; ui: link "": label must be 1 to 2048 bytes ...`},
		{"ui unknown argument", inJob("ui {\n    title = \"x\"\n  }"),
			`job.hcl:4,5: Unsupported argument; An argument named "title" is not expected here.`},
		{"migrate bad health check", inJob("migrate {\n    health_check = \"http\"\n  }"),
			`job.hcl:4,20: Invalid value; health_check = "http" is not one of checks, task_states.`},
		{"migrate min_healthy_time past deadline", inGroup("migrate {\n      min_healthy_time = \"10m\"\n    }"),
			`job.hcl:4,5: Invalid migrate block; migrate: min_healthy_time 10m0s must be below healthy_deadline 5m0s.`},
		{"all_at_once not a bool", inJob(`all_at_once = "sometimes"`),
			`job.hcl:3,17: ...`},
		{"bad group shutdown_delay", inGroup(`shutdown_delay = "soon"`),
			`job.hcl:4,22: Invalid duration; shutdown_delay = "soon" is not a duration ...`},
		{"negative task shutdown_delay", inTask(`shutdown_delay = "-1s"`),
			`job.hcl:6,24: Invalid duration; shutdown_delay = "-1s" must not be negative.`},
		{"memory_max below memory", inResources("memory = 512\n        memory_max = 256"),
			`job.hcl:8,22: Invalid memory_max; memory_max (256 MB) must not be less than memory (512 MB): memory is reserved, memory_max is the limit.`},
		{"memory_max not a size", inResources(`memory_max = "lots"`),
			`job.hcl:7,22: Invalid size; ...`},
		{"cores refused", inResources("cores = 2"),
			`job.hcl:7,9: Unsupported argument; The argument "cores" (exclusive CPU cores) is not supported by Drover yet: the scheduler does not reserve cores. Use cpu (MHz) instead.`},
		{"logs disabled not a bool", inTask("logs {\n        disabled = 3\n      }"),
			`job.hcl:7,20: ...`},
		{"restart render_templates not a bool", inGroup("restart {\n      render_templates = \"x\"\n    }"),
			`job.hcl:5,26: ...`},
		{"scaling in a system job", "job \"x\" {\n  datacenters = [\"dc1\"]\n  type = \"system\"\n  group \"g\" {\n    scaling {\n      max = 1\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n",
			`job.hcl:1,1: Invalid job; job "x": group "g": scaling: a system job runs one allocation per node and cannot be scaled`},
		{"node_pool still refused", inJob(`node_pool = "gpu"`),
			`job.hcl:3,3: Unsupported argument; The argument "node_pool" is not supported by Drover yet.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFirstError(t, "job.hcl", tt.src, tt.want)
		})
	}
}

// TestParseMiscJSONErrors: the JSON forms are validated too.
func TestParseMiscJSONErrors(t *testing.T) {
	job := func(group, top string) string {
		return `{"ID": "x", "Datacenters": ["dc1"]` + top + `, "TaskGroups": [{"Name": "g"` + group +
			`, "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`
	}
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"count over max", job(`, "Count": 4, "Scaling": {"Min": 1, "Max": 3}`, ""),
			`job.json:1,1: Invalid job; job "x": group "g": scaling: count 4 is outside the policy's bounds [1, 3]`},
		{"no max", job(`, "Scaling": {"Min": 1}`, ""),
			`job.json:1,1: Invalid job; job "x": group "g": scaling: max is required`},
		{"ui url", job("", `, "UI": {"Links": [{"Label": "a", "URL": "ftp://x"}]}`),
			`job.json:1,1: Invalid job; job "x": ui: link "a": url "ftp://x" must be an absolute http or https URL`},
		{"migrate health check", job(`, "Migrate": {"MaxParallel": 1, "HealthCheck": "x", "HealthyDeadline": 1000000000}`, ""),
			`job.json:1,1: Invalid job; job "x": group "g": migrate: health_check "x" is not one of checks, task_states`},
		{"memory max", `{"ID": "x", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Resources": {"MemoryMB": 500, "MemoryMaxMB": 100}}]}]}`,
			`job.json:1,1: Invalid job; job "x": group "g": task "t": memory_max 100 MB must not be less than memory 500 MB`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFirstError(t, "job.json", tt.src, tt.want)
		})
	}
}

// TestScalingMinIsDefaultCount: a group without count takes its scaling
// min, in HCL and JSON, as Nomad does; the policy's ID is derived and
// stable.
func TestScalingMinIsDefaultCount(t *testing.T) {
	hcl := inGroup("scaling {\n      min = 4\n      max = 9\n    }")
	js := `{"ID": "x", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Scaling": {"Min": 4, "Max": 9}, "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`
	for name, src := range map[string]string{"job.hcl": hcl, "job.json": js} {
		job, err := Parse(name, []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tg := job.TaskGroups[0]
		if tg.Count != 4 || !*tg.Scaling.Enabled || tg.Scaling.Type != "horizontal" {
			t.Errorf("%s: count %d, enabled %v, type %q; want 4, true, horizontal", name, tg.Count, *tg.Scaling.Enabled, tg.Scaling.Type)
		}
		if got := tg.Scaling.ID; len(got) != 36 || strings.Count(got, "-") != 4 {
			t.Errorf("%s: policy ID %q, want a UUID-shaped ID", name, got)
		}
	}
}

// TestDiskWarns: the deprecated resources disk is accepted and warned
// about.
func TestDiskWarns(t *testing.T) {
	job, err := Parse("job.hcl", []byte(inResources("disk = 300")))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(job.Warnings(), "\n")
	if !strings.Contains(w, "resources disk is deprecated") {
		t.Errorf("warnings %q, want one about disk", w)
	}
}
