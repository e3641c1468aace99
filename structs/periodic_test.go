package structs

import (
	"strings"
	"testing"
	"time"
)

func periodicTestJob(typ string) *Job {
	j := &Job{ID: "p", Type: typ, Datacenters: []string{"dc1"},
		TaskGroups: []*TaskGroup{{Name: "g", Count: 1, Tasks: []*Task{{Name: "t", Driver: "raw_exec"}}}}}
	return j
}

func TestPeriodicValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(j *Job)
		want   string // "" is valid
	}{
		{"cron", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, Spec: "*/5 * * * *"} }, ""},
		{"crons with seconds", func(j *Job) {
			j.Periodic = &PeriodicConfig{Enabled: true, Specs: []string{"*/2 * * * * * *", "@daily"}}
		}, ""},
		{"bad cron", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, Spec: "nope"} }, `periodic: cron "nope"`},
		{"reboot", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, Spec: "@reboot"} }, "@reboot is not supported"},
		{"no cron", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true} }, "periodic: missing cron"},
		{"both", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, Spec: "@daily", Specs: []string{"@daily"}} }, "set cron or crons, not both"},
		{"too many crons", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, Specs: make([]string, PeriodicMaxSpecs+1)} }, "at most 64"},
		{"time zone", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, Spec: "@daily", TimeZone: "Nowhere/Land"} }, "not a known time zone"},
		{"spec type", func(j *Job) { j.Periodic = &PeriodicConfig{Enabled: true, Spec: "@daily", SpecType: "rate"} }, `spec type "rate"`},
		{"service", func(j *Job) { j.Type = JobTypeService; j.Periodic = &PeriodicConfig{Enabled: true, Spec: "@daily"} }, "periodic is for batch and sysbatch jobs"},
		{"disabled service", func(j *Job) { j.Type = JobTypeService; j.Periodic = &PeriodicConfig{Spec: "@daily"} }, ""},
		{"periodic and parameterized", func(j *Job) {
			j.Periodic = &PeriodicConfig{Enabled: true, Spec: "@daily"}
			j.ParameterizedJob = &ParameterizedJobConfig{}
		}, ""},
		{"parameterized service", func(j *Job) { j.Type = JobTypeService; j.ParameterizedJob = &ParameterizedJobConfig{} }, "parameterized is for batch"},
		{"payload mode", func(j *Job) { j.ParameterizedJob = &ParameterizedJobConfig{Payload: "maybe"} }, `payload "maybe"`},
		{"meta key twice", func(j *Job) {
			j.ParameterizedJob = &ParameterizedJobConfig{MetaRequired: []string{"a"}, MetaOptional: []string{"a"}}
		}, `"a" listed twice`},
		{"meta key with =", func(j *Job) { j.ParameterizedJob = &ParameterizedJobConfig{MetaRequired: []string{"a=b"}} }, "without '='"},
		{"too many meta keys", func(j *Job) { j.ParameterizedJob = &ParameterizedJobConfig{MetaOptional: make([]string, 65)} }, "at most 64"},
		{"payload file", func(j *Job) { j.TaskGroups[0].Tasks[0].DispatchPayload = &DispatchPayloadConfig{File: "in/x.json"} }, ""},
		{"payload file dotdot", func(j *Job) { j.TaskGroups[0].Tasks[0].DispatchPayload = &DispatchPayloadConfig{File: "a/../../x"} }, "escapes the task's local directory"},
		{"payload file absolute", func(j *Job) { j.TaskGroups[0].Tasks[0].DispatchPayload = &DispatchPayloadConfig{File: "/etc/x"} }, "must be relative"},
		{"payload file empty", func(j *Job) { j.TaskGroups[0].Tasks[0].DispatchPayload = &DispatchPayloadConfig{} }, "missing file"},
		{"payload too big", func(j *Job) { j.Payload = make([]byte, DispatchPayloadSizeLimit+1) }, "over the limit 16384"},
		{"child ID", func(j *Job) { j.ID, j.ParentID = "p/periodic-123", "p" }, ""},
		{"slash without parent", func(j *Job) { j.ID = "p/periodic-123" }, "ID must be"},
		{"child ID dotdot part", func(j *Job) { j.ID, j.ParentID = "p/../x", "p" }, "ID must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := periodicTestJob(JobTypeBatch)
			tt.modify(j)
			j.Canonicalize()
			err := j.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate: %v, want %q", err, tt.want)
			}
		})
	}
}

func TestPeriodicCopyAndChild(t *testing.T) {
	j := periodicTestJob(JobTypeBatch)
	j.Periodic = &PeriodicConfig{Enabled: true, Specs: []string{"@daily"}}
	j.ParameterizedJob = &ParameterizedJobConfig{MetaRequired: []string{"a"}}
	j.TaskGroups[0].Tasks[0].DispatchPayload = &DispatchPayloadConfig{File: "x"}
	j.Payload = []byte("p")
	c := j.Copy()
	c.Periodic.Specs[0] = "changed"
	c.ParameterizedJob.MetaRequired[0] = "changed"
	c.TaskGroups[0].Tasks[0].DispatchPayload.File = "changed"
	c.Payload[0] = 'x'
	if j.Periodic.Specs[0] != "@daily" || j.ParameterizedJob.MetaRequired[0] != "a" ||
		j.TaskGroups[0].Tasks[0].DispatchPayload.File != "x" || string(j.Payload) != "p" {
		t.Errorf("Copy shares state with the original: %+v", j)
	}

	launch := time.Unix(1_790_000_000, 0)
	id := PeriodicChildID("p", launch)
	child := j.DeriveChild(id)
	if child.ID != "p/periodic-1790000000" || child.ParentID != "p" || child.Periodic != nil || child.JobModifyIndex != 0 {
		t.Errorf("child = %+v", child)
	}
	if got, ok := PeriodicLaunchTime("p", id); !ok || !got.Equal(launch) {
		t.Errorf("PeriodicLaunchTime(%q) = %v %v", id, got, ok)
	}
	for _, bad := range []string{"q/periodic-1", "p/periodic-", "p/periodic-01", "p/periodic-1x", "p/dispatch-1"} {
		if _, ok := PeriodicLaunchTime("p", bad); ok {
			t.Errorf("PeriodicLaunchTime(%q) ok", bad)
		}
	}
}
