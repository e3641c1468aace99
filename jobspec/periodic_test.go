package jobspec

import "testing"

// inJob places body lines inside a valid batch job, starting at line 3,
// column 3.
func inTypedJob(typ, body string) string {
	return "job \"x\" {\n" + // 1
		"  type = \"" + typ + "\"\n" + // 2
		"  " + body + "\n" + // 3
		"  datacenters = [\"dc1\"]\n" +
		"  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n"
}

func TestParsePeriodicErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"bad cron", inTypedJob("batch", `periodic { cron = "61 * * * *" }`),
			`job.hcl:3,3: Invalid periodic block; periodic: cron "61 * * * *": ...`},
		{"both cron and crons", inTypedJob("batch", `periodic {
    cron = "* * * * *"
    crons = ["* * * * *"]
  }`),
			`job.hcl:3,3: Invalid periodic block; periodic: set cron or crons, not both.`},
		{"missing cron", inTypedJob("batch", `periodic { prohibit_overlap = true }`),
			`job.hcl:3,3: Invalid periodic block; periodic: missing cron.`},
		{"bad time zone", inTypedJob("batch", `periodic {
    cron = "@daily"
    time_zone = "Mars/Olympus"
  }`),
			`job.hcl:3,3: Invalid periodic block; periodic: time_zone "Mars/Olympus" is not a known time zone.`},
		{"unknown periodic argument", inTypedJob("batch", `periodic {
    spec = "@daily"
  }`),
			`job.hcl:4,5: Unsupported argument; An argument named "spec" is not expected here.`},
		{"periodic service", inTypedJob("service", `periodic { cron = "@daily" }`),
			`job.hcl:1,1: Invalid job; job "x": periodic is for batch and sysbatch jobs, not service`},
		{"bad payload mode", inTypedJob("batch", `parameterized { payload = "maybe" }`),
			`job.hcl:3,29: Invalid value; payload = "maybe" is not one of optional, required, forbidden.`},
		{"duplicate meta key", inTypedJob("batch", `parameterized {
    meta_required = ["a"]
    meta_optional = ["a"]
  }`),
			`job.hcl:3,3: Invalid parameterized block; parameterized: meta key "a" listed twice.`},
		{"parameterized service", inTypedJob("service", `parameterized {}`),
			`job.hcl:1,1: Invalid job; job "x": parameterized is for batch and sysbatch jobs, not service`},
		{"payload file escapes", inTask(`dispatch_payload { file = "../../etc/passwd" }`),
			`job.hcl:6,33: Invalid dispatch_payload file; dispatch_payload: file "../../etc/passwd" escapes the task's local directory.`},
		{"payload file absolute", inTask(`dispatch_payload { file = "/etc/passwd" }`),
			`job.hcl:6,33: Invalid dispatch_payload file; dispatch_payload: file "/etc/passwd" must be relative to the task's local directory.`},
		{"payload file missing", inTask(`dispatch_payload {}`),
			`job.hcl:6,7: Missing required argument; The argument "file" is required in dispatch_payload.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFirstError(t, "job.hcl", tt.src, tt.want)
		})
	}
}
