package jobspec

import (
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// inTypedGroup places body lines inside group "g" of a valid job of type
// typ, starting at line 5, column 5.
func inTypedGroup(typ, body string) string {
	return "job \"x\" {\n" + // 1
		"  type = \"" + typ + "\"\n" + // 2
		"  datacenters = [\"dc1\"]\n  group \"g\" {\n" + // 3, 4
		"    " + body + "\n" + // 5
		"    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n"
}

func TestUpdateErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "negative max_parallel",
			src:  inTypedGroup("service", "update {\n      max_parallel = -1\n    }"),
			want: "job.hcl:6,22: Invalid value; max_parallel = -1 is out of range: want at least 0.",
		},
		{
			name: "min_healthy_time past healthy_deadline",
			src:  inTypedGroup("service", "update {\n      min_healthy_time = \"10m\"\n    }"),
			want: "job.hcl:5,5: Invalid update block; update min_healthy_time 10m0s must be below healthy_deadline 5m0s.",
		},
		{
			name: "healthy_deadline past progress_deadline",
			src:  inTypedGroup("service", "update {\n      healthy_deadline = \"20m\"\n    }"),
			want: "job.hcl:5,5: Invalid update block; update healthy_deadline 20m0s must be below progress_deadline 10m0s.",
		},
		{
			name: "unknown health_check",
			src:  inTypedGroup("service", "update {\n      health_check = \"http\"\n    }"),
			want: `job.hcl:6,22: Invalid value; health_check = "http" is not one of checks, task_states, manual.`,
		},
		{
			name: "auto_promote without canary",
			src:  inTypedGroup("service", "update {\n      auto_promote = true\n    }"),
			want: "job.hcl:5,5: Invalid update block; update auto_promote needs canary > 0.",
		},
		{
			name: "two update blocks",
			src:  inTypedGroup("service", "update {\n    }\n    update {\n    }"),
			want: "job.hcl:7,5: Duplicate update block; ...",
		},
		{
			name: "json negative max_parallel",
			src:  `{"ID": "x", "Datacenters": ["dc1"], "Update": {"MaxParallel": -2}, "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`,
			want: `job.json:1,1: Invalid job; job "x": update max_parallel -2 must not be negative`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			filename := "job.hcl"
			if isJSON("", []byte(tt.src)) {
				filename = "job.json"
			}
			assertFirstError(t, filename, tt.src, tt.want)
		})
	}
}

// TestUpdateDefaults: a service job without an update block gets Nomad's
// default in the job and every group; a batch job gets none; a JSON
// strategy given in part keeps its zero max_parallel (no limit) and gets
// the fields whose zero is invalid.
func TestUpdateDefaults(t *testing.T) {
	tests := []struct {
		name     string
		filename string
		src      string
		// want is the group's strategy; the job's is the same unless
		// groupOnly.
		want      *structs.UpdateStrategy
		groupOnly bool
	}{
		{name: "service default", filename: "job.hcl", src: inTypedGroup("service", ""), want: structs.DefaultUpdateStrategy()},
		{name: "batch none", filename: "job.hcl", src: inTypedGroup("batch", ""), want: nil},
		{
			name:      "batch group block kept",
			filename:  "job.hcl",
			src:       inTypedGroup("batch", "update {\n      max_parallel = 3\n    }"),
			want:      func() *structs.UpdateStrategy { u := structs.DefaultUpdateStrategy(); u.MaxParallel = 3; return u }(),
			groupOnly: true,
		},
		{
			name:     "json partial",
			filename: "job.json",
			src:      `{"ID": "x", "Datacenters": ["dc1"], "Update": {"MinHealthyTime": 1000000000}, "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`,
			want: &structs.UpdateStrategy{
				Stagger: 30 * time.Second, HealthCheck: structs.UpdateHealthCheckChecks,
				MinHealthyTime: time.Second, HealthyDeadline: 5 * time.Minute,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, err := Parse(tt.filename, []byte(tt.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := job.TaskGroups[0].Update; !sameUpdate(got, tt.want) {
				t.Errorf("group update: got %+v, want %+v", got, tt.want)
			}
			wantJob := tt.want
			if tt.groupOnly {
				wantJob = nil
			}
			if got := job.Update; !sameUpdate(got, wantJob) {
				t.Errorf("job update: got %+v, want %+v", got, wantJob)
			}
		})
	}
}

func sameUpdate(a, b *structs.UpdateStrategy) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
