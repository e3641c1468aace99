package structs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func limitsJob() *Job {
	return &Job{
		ID: "x", Name: "x", Type: JobTypeBatch, Datacenters: []string{"dc1"},
		TaskGroups: []*TaskGroup{{
			Name: "g", Count: 1,
			Tasks: []*Task{{
				Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
				Resources: &Resources{CPU: 100, MemoryMB: 64, Devices: []*RequestedDevice{{Name: "gpu", Count: 1}}},
			}},
		}},
	}
}

// nestedConfig returns a config nested depth levels deep (the config map
// itself is the first level).
func nestedConfig(depth int) map[string]any {
	var v any = "leaf"
	for range depth - 1 {
		v = []any{v}
	}
	return map[string]any{"args": v}
}

func TestJobCheckLimits(t *testing.T) {
	long := strings.Repeat("a", 129)
	tests := []struct {
		name    string
		mutate  func(*Job)
		setting string // "" when the job is within the limits
	}{
		{"valid", func(*Job) {}, ""},
		{"count 1e9", func(j *Job) { j.TaskGroups[0].Count = 1e9 }, `group "g": count 1000000000 over the limit 10000 (limits.job_max_count)`},
		{"count at the limit", func(j *Job) { j.TaskGroups[0].Count = 10000 }, ""},
		{"gpu count 2^63", func(j *Job) { j.TaskGroups[0].Tasks[0].Resources.Devices[0].Count = 1 << 63 }, "over the limit 1024 (limits.device_max_count)"},
		{"gpu count 1025", func(j *Job) { j.TaskGroups[0].Tasks[0].Resources.Devices[0].Count = 1025 }, "(limits.device_max_count)"},
		{"gpu count 1024", func(j *Job) { j.TaskGroups[0].Tasks[0].Resources.Devices[0].Count = 1024 }, ""},
		{"long ID", func(j *Job) { j.ID = long }, "ID length 129 over the limit 128 (limits.name_max_length)"},
		{"long task name", func(j *Job) { j.TaskGroups[0].Tasks[0].Name = long }, "(limits.name_max_length)"},
		{"long datacenter", func(j *Job) { j.Datacenters = []string{long} }, "(limits.name_max_length)"},
		{"too many groups", func(j *Job) {
			for range 1000 {
				j.TaskGroups = append(j.TaskGroups, j.TaskGroups[0])
			}
		}, "group number 1001 over the limit 1000 (limits.job_max_groups)"},
		{"too many tasks", func(j *Job) {
			tg := j.TaskGroups[0]
			for range 1000 {
				tg.Tasks = append(tg.Tasks, tg.Tasks[0])
			}
		}, "task number 1001 over the limit 1000 (limits.job_max_tasks)"},
		{"config 1100 deep", func(j *Job) { j.TaskGroups[0].Tasks[0].Config = nestedConfig(1100) }, "(limits.task_config_max_depth)"},
		{"config 32 deep", func(j *Job) { j.TaskGroups[0].Tasks[0].Config = nestedConfig(32) }, ""},
		{"config 33 deep", func(j *Job) { j.TaskGroups[0].Tasks[0].Config = nestedConfig(33) }, "(limits.task_config_max_depth)"},
		{"2 MiB job", func(j *Job) { j.Meta = map[string]string{"big": strings.Repeat("x", 2<<20)} }, "over the limit 1048576 (limits.job_max_size)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := limitsJob()
			tt.mutate(job)
			err := job.CheckLimits(Limits{})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.setting == "" && err != nil || tt.setting != "" && !strings.Contains(got, tt.setting) {
				t.Fatalf("CheckLimits = %q, want one containing %q", got, tt.setting)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("CheckLimits = %v, want it to wrap ErrInvalid", err)
			}
		})
	}
}

func TestLimitsOverride(t *testing.T) {
	job := limitsJob()
	job.TaskGroups[0].Count = 20
	err := job.CheckLimits(Limits{JobMaxCount: 10})
	if err == nil || !strings.Contains(err.Error(), "count 20 over the limit 10 (limits.job_max_count)") {
		t.Fatalf("CheckLimits = %v, want the limit 10 named", err)
	}
}

func TestRequestedDeviceJSONCount(t *testing.T) {
	tests := []struct {
		body    string
		want    uint64
		wantErr string
	}{
		{`{"Name": "gpu"}`, 1, ""},
		{`{"Name": "gpu", "Count": 4}`, 4, ""},
		{`{"Name": "gpu", "Count": 0}`, 0, "count 0 under the minimum 1"},
		{`{"Name": "gpu", "Count": -1}`, 0, "cannot unmarshal"},
		{`{"Name": "gpu", "Count": 9223372036854775808}`, 1 << 63, ""},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			var d RequestedDevice
			err := json.Unmarshal([]byte(tt.body), &d)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Fatalf("Unmarshal = %q, want an error containing %q", got, tt.wantErr)
			}
			if err == nil && d.Count != tt.want {
				t.Fatalf("Count = %d, want %d", d.Count, tt.want)
			}
		})
	}
}
