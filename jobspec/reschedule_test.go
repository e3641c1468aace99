package jobspec

import (
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// inGroup places body lines inside group "g" of a valid job, starting at
// line 4, column 5.
func inGroup(body string) string {
	return "job \"x\" {\n" + // 1
		"  datacenters = [\"dc1\"]\n" + // 2
		"  group \"g\" {\n" + // 3
		"    " + body + "\n" + // 4
		"    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n"
}

func TestRescheduleErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "unknown delay function",
			src:  inGroup(`reschedule { delay_function = "linear" }`),
			want: `job.hcl:4,35: Invalid value; delay_function = "linear" is not one of constant, exponential, fibonacci.`,
		},
		{
			name: "negative attempts",
			src:  inGroup(`reschedule { attempts = -1 }`),
			want: "job.hcl:4,29: ...",
		},
		{
			name: "max delay below delay",
			src:  inGroup("reschedule {\n      delay = \"2m\"\n      max_delay = \"1m\"\n      delay_function = \"exponential\"\n    }"),
			want: "job.hcl:4,5: Invalid reschedule block; reschedule max_delay 1m0s must not be below delay 2m0s with the exponential delay function.",
		},
		{
			name: "attempts without interval",
			src:  inGroup("reschedule {\n      attempts = 2\n      interval = \"0s\"\n      unlimited = false\n    }"),
			want: "job.hcl:4,5: Invalid reschedule block; reschedule interval must be set when attempts is 2 and unlimited is false.",
		},
		{
			name: "unknown argument",
			src:  inGroup(`reschedule { tries = 2 }`),
			want: `job.hcl:4,18: Unsupported argument; An argument named "tries" is not expected here.`,
		},
		{
			name: "duplicate block",
			src:  inGroup("reschedule {}\n    reschedule {}"),
			want: "job.hcl:5,5: Duplicate reschedule block; Only one reschedule block is allowed here; the first is at line 4.",
		},
		{
			name: "job level",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  reschedule { delay = \"soon\" }\n}\n",
			want: "job.hcl:3,24: ...",
		},
		{
			name: "in a task",
			src:  inTask(`reschedule {}`),
			want: "job.hcl:6,7: Unsupported block type; ...",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFirstError(t, "job.hcl", tt.src, tt.want)
		})
	}
}

func TestRescheduleJSON(t *testing.T) {
	tests := []struct {
		name    string
		policy  string
		want    *structs.ReschedulePolicy
		wantErr string
	}{
		{
			name:   "partial policy canonicalized",
			policy: `{"Attempts": 2, "Interval": 60000000000, "Delay": 1000000000}`,
			want:   &structs.ReschedulePolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, DelayFunction: structs.DelayFunctionConstant},
		},
		{
			name:   "exponential gets a cap",
			policy: `{"Unlimited": true, "Delay": 1000000000, "DelayFunction": "exponential"}`,
			want:   &structs.ReschedulePolicy{Unlimited: true, Delay: time.Second, DelayFunction: structs.DelayFunctionExponential, MaxDelay: time.Hour},
		},
		{
			name:    "bad delay function",
			policy:  `{"DelayFunction": "linear"}`,
			wantErr: `job.json:1,1: Invalid job; job "x": group "g": reschedule delay_function "linear" is not one of constant, exponential, fibonacci`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `{"ID": "x", "Type": "batch", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1, "ReschedulePolicy": ` +
				tt.policy + `, "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`
			job, err := Parse("job.json", []byte(src))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("got error %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := job.TaskGroups[0].ReschedulePolicy; *got != *tt.want {
				t.Errorf("got %+v, want %+v", *got, *tt.want)
			}
		})
	}
}

func TestRescheduleDefaultsPerType(t *testing.T) {
	tests := []struct {
		typ  string
		want structs.ReschedulePolicy
	}{
		{structs.JobTypeBatch, structs.ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant}},
		{structs.JobTypeService, structs.ReschedulePolicy{Unlimited: true, Interval: time.Hour, Delay: 30 * time.Second, DelayFunction: structs.DelayFunctionExponential, MaxDelay: time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			// An empty block keeps every field of the type's default.
			src := "job \"x\" {\n  type = \"" + tt.typ + "\"\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    reschedule {}\n" +
				"    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n"
			job, err := Parse("job.hcl", []byte(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := *job.TaskGroups[0].ReschedulePolicy; got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
