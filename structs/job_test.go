package structs

import (
	"strings"
	"testing"
	"time"
)

// testJob returns a small valid, canonicalized batch job with one GPU
// request.
func testJob() *Job {
	j := &Job{
		ID:          "train",
		Type:        JobTypeBatch,
		Datacenters: []string{"dc1"},
		Constraints: []*Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		Meta:        map[string]string{"owner": "ml"},
		TaskGroups: []*TaskGroup{{
			Name:  "g",
			Count: 1,
			Tasks: []*Task{{
				Name:   "t",
				Driver: "raw_exec",
				Config: map[string]any{"command": "/bin/true"},
				Env:    map[string]string{"A": "1"},
				Resources: &Resources{CPU: 500, MemoryMB: 256, Devices: []*RequestedDevice{{
					Name:        "nvidia/gpu",
					Count:       2,
					Constraints: []*Constraint{{LTarget: "${device.attr.memory}", RTarget: "40 GiB", Operand: ">="}},
					Affinities:  []*Affinity{{LTarget: "${device.model}", RTarget: "H100", Operand: "regexp", Weight: 50}},
				}}},
			}},
		}},
	}
	j.Canonicalize()
	return j
}

func TestJobCanonicalize(t *testing.T) {
	j := &Job{ID: "web", TaskGroups: []*TaskGroup{{
		Name:  "g",
		Tasks: []*Task{{Name: "t", Resources: &Resources{Devices: []*RequestedDevice{{Name: "gpu"}}}}, {Name: "u"}},
	}}}
	j.Canonicalize()
	tg := j.TaskGroups[0]
	tests := []struct {
		name      string
		got, want any
	}{
		{"namespace", j.Namespace, DefaultNamespace},
		{"name from ID", j.Name, "web"},
		{"type", j.Type, JobTypeService},
		{"priority", j.Priority, JobDefaultPriority},
		{"region", j.Region, "global"},
		{"count left alone", tg.Count, 0},
		{"service restart", *tg.RestartPolicy, *DefaultRestartPolicy(JobTypeService)},
		{"kill timeout", tg.Tasks[0].KillTimeout, 5 * time.Second},
		{"cpu", tg.Tasks[0].Resources.CPU, 100},
		{"memory", tg.Tasks[0].Resources.MemoryMB, 300},
		{"device count", tg.Tasks[0].Resources.Devices[0].Count, uint64(1)},
		{"nil resources filled", tg.Tasks[1].Resources != nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestJobCanonicalizeKeepsValues(t *testing.T) {
	j := testJob()
	j.Priority, j.Namespace = 90, "team"
	j.TaskGroups[0].RestartPolicy = &RestartPolicy{Attempts: 7, Mode: RestartModeDelay}
	j.Canonicalize()
	if j.Priority != 90 || j.Namespace != "team" || j.TaskGroups[0].RestartPolicy.Attempts != 7 {
		t.Errorf("got priority %d namespace %q attempts %d, want 90, team, 7",
			j.Priority, j.Namespace, j.TaskGroups[0].RestartPolicy.Attempts)
	}
}

func TestDefaultRestartPolicy(t *testing.T) {
	for _, typ := range []string{JobTypeBatch, JobTypeSysBatch} {
		if got := DefaultRestartPolicy(typ); got.Attempts != 3 || got.Interval != 24*time.Hour {
			t.Errorf("%s: got %+v, want 3 attempts in 24h", typ, got)
		}
	}
	for _, typ := range []string{JobTypeService, JobTypeSystem} {
		if got := DefaultRestartPolicy(typ); got.Attempts != 2 || got.Interval != 30*time.Minute {
			t.Errorf("%s: got %+v, want 2 attempts in 30m", typ, got)
		}
	}
}

func TestJobValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(j *Job)
		want   string // substring of the error; "" means valid
	}{
		{"valid", func(j *Job) {}, ""},
		{"missing ID", func(j *Job) { j.ID = "" }, "job: missing ID"},
		{"bad ID", func(j *Job) { j.ID = "has space" }, "ID must be"},
		{"long ID", func(j *Job) { j.ID = strings.Repeat("a", 129) }, "ID must be"},
		{"bad type", func(j *Job) { j.Type = "cron" }, `type "cron" is not one of`},
		{"priority low", func(j *Job) { j.Priority = 0 }, "priority 0 must be between 1 and 100"},
		{"priority high", func(j *Job) { j.Priority = 101 }, "priority 101"},
		{"no datacenters", func(j *Job) { j.Datacenters = nil }, "missing datacenters"},
		{"no groups", func(j *Job) { j.TaskGroups = nil }, "missing task group"},
		{"duplicate group", func(j *Job) { j.TaskGroups = append(j.TaskGroups, j.TaskGroups[0].Copy()) }, `duplicate group "g"`},
		{"job constraint", func(j *Job) { j.Constraints[0].Operand = "~" }, `unknown operator "~"`},
		{"group name", func(j *Job) { j.TaskGroups[0].Name = "" }, "group: missing name"},
		{"negative count", func(j *Job) { j.TaskGroups[0].Count = -1 }, "count -1 must not be negative"},
		{"zero count", func(j *Job) { j.TaskGroups[0].Count = 0 }, ""},
		{"system count", func(j *Job) { j.Type, j.TaskGroups[0].Count = JobTypeSystem, 2 }, `group "g": count 2 cannot exceed 1 for a system job`},
		{"sysbatch count", func(j *Job) { j.Type, j.TaskGroups[0].Count = JobTypeSysBatch, 3 }, "count 3 cannot exceed 1 for a sysbatch job"},
		{"system count 1", func(j *Job) { j.Type, j.TaskGroups[0].Count = JobTypeSystem, 1 }, ""},
		{"no tasks", func(j *Job) { j.TaskGroups[0].Tasks = nil }, `group "g": missing task`},
		{"restart mode", func(j *Job) { j.TaskGroups[0].RestartPolicy.Mode = "never" }, `restart mode "never"`},
		{"restart attempts", func(j *Job) { j.TaskGroups[0].RestartPolicy.Attempts = -1 }, "restart attempts -1"},
		{"restart delay", func(j *Job) { j.TaskGroups[0].RestartPolicy.Delay = -time.Second }, "restart delay and interval"},
		{"duplicate task", func(j *Job) {
			tg := j.TaskGroups[0]
			tg.Tasks = append(tg.Tasks, tg.Tasks[0].Copy())
		}, `duplicate task "t"`},
		{"missing driver", func(j *Job) { j.TaskGroups[0].Tasks[0].Driver = "" }, `task "t": missing driver`},
		{"negative kill timeout", func(j *Job) { j.TaskGroups[0].Tasks[0].KillTimeout = -time.Second }, "kill_timeout must not be negative"},
		{"user with a space", func(j *Job) { j.TaskGroups[0].Tasks[0].User = "ro ot" }, `user "ro ot" is not a user name or ID`},
		{"negative cpu", func(j *Job) { j.TaskGroups[0].Tasks[0].Resources.CPU = -1 }, "cpu and memory must not be negative"},
		{"device name", func(j *Job) { device(j).Name = "nvidia//x" }, `device name "nvidia//x"`},
		{"device model with spaces", func(j *Job) { device(j).Name = "nvidia/gpu/H100 80GB HBM3" }, ""},
		{"topology", func(j *Job) { device(j).Topology = "pcie" }, `topology "pcie"`},
		{"topology nvlink", func(j *Job) { device(j).Topology = "nvlink" }, ""},
		{"compute range", func(j *Job) { device(j).Compute = 101 }, "compute 101 must be a percentage"},
		{"fractional count", func(j *Job) { device(j).MemoryMB = 1024 }, "must have count = 1, not 2"},
		{"fractional ok", func(j *Job) { device(j).MemoryMB, device(j).Count = 1024, 1 }, ""},
		{"device constraint", func(j *Job) { device(j).Constraints[0].LTarget = "" }, "missing attribute"},
		{"device affinity weight", func(j *Job) { device(j).Affinities[0].Weight = 0 }, "weight 0 must be between"},
		{"bad regexp", func(j *Job) { device(j).Affinities[0].RTarget = "(" }, "bad regexp"},
		{"distinct_hosts needs nothing", func(j *Job) {
			j.Constraints = append(j.Constraints, &Constraint{Operand: ConstraintDistinctHosts})
		}, ""},
		{"is_set needs attribute", func(j *Job) {
			j.Constraints = append(j.Constraints, &Constraint{Operand: ConstraintAttributeIsSet})
		}, "missing attribute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := testJob()
			tt.mutate(j)
			err := j.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func device(j *Job) *RequestedDevice { return j.TaskGroups[0].Tasks[0].Resources.Devices[0] }

func TestJobValidateReportsAll(t *testing.T) {
	j := testJob()
	j.Datacenters = nil
	j.TaskGroups[0].Tasks[0].Driver = ""
	err := j.Validate()
	for _, want := range []string{"missing datacenters", "missing driver"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to contain %q", err, want)
		}
	}
}

func TestJobCopyIsDeep(t *testing.T) {
	j := testJob()
	c := j.Copy()
	c.Datacenters[0] = "other"
	c.Meta["owner"] = "other"
	c.Constraints[0].RTarget = "other"
	c.TaskGroups[0].RestartPolicy.Attempts = 99
	task := c.TaskGroups[0].Tasks[0]
	task.Env["A"] = "other"
	task.Config["command"] = "other"
	task.Resources.CPU = 1
	task.Resources.Devices[0].Constraints[0].RTarget = "other"
	task.Resources.Devices[0].Count = 9

	orig := j.TaskGroups[0].Tasks[0]
	if j.Datacenters[0] != "dc1" || j.Meta["owner"] != "ml" || j.Constraints[0].RTarget != "linux" ||
		j.TaskGroups[0].RestartPolicy.Attempts == 99 || orig.Env["A"] != "1" ||
		orig.Config["command"] != "/bin/true" || orig.Resources.CPU != 500 ||
		orig.Resources.Devices[0].Constraints[0].RTarget != "40 GiB" || orig.Resources.Devices[0].Count != 2 {
		t.Errorf("changing the copy changed the original: %+v", j)
	}
	if (*Job)(nil).Copy() != nil {
		t.Error("got a copy of a nil job, want nil")
	}
}

func TestParseDeviceName(t *testing.T) {
	tests := []struct {
		in                 string
		vendor, typ, model string
		wantErr            bool
	}{
		{"gpu", "", "gpu", "", false},
		{"nvidia/gpu", "nvidia", "gpu", "", false},
		{"nvidia/gpu/H100 80GB HBM3", "nvidia", "gpu", "H100 80GB HBM3", false},
		{"nvidia/gpu/a/b", "nvidia", "gpu", "a/b", false},
		{"", "", "", "", true},
		{"nvidia/", "", "", "", true},
		{"/gpu", "", "", "", true},
		{"nvidia/gpu/ ", "", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, ty, m, err := ParseDeviceName(tt.in)
			if (err != nil) != tt.wantErr || v != tt.vendor || ty != tt.typ || m != tt.model {
				t.Errorf("got %q %q %q %v, want %q %q %q error %v", v, ty, m, err, tt.vendor, tt.typ, tt.model, tt.wantErr)
			}
		})
	}
}

func TestNodeDeviceResourceMatches(t *testing.T) {
	g := &NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3"}
	tests := []struct {
		vendor, typ, model string
		want               bool
	}{
		{"", "gpu", "", true},
		{"nvidia", "gpu", "", true},
		{"NVIDIA", "GPU", "", true},
		{"amd", "gpu", "", false},
		{"nvidia", "fpga", "", false},
		{"nvidia", "gpu", "NVIDIA H100 80GB HBM3", true},
		{"nvidia", "gpu", "h100 80gb hbm3", true},
		{"nvidia", "gpu", "H100", false},
		{"nvidia", "gpu", "A100 80GB", false},
	}
	for _, tt := range tests {
		t.Run(tt.vendor+"/"+tt.typ+"/"+tt.model, func(t *testing.T) {
			if got := g.Matches(tt.vendor, tt.typ, tt.model); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCheckTaskName: a task's name becomes its directory inside the
// allocation's, so it may not climb out of it or take the shared dir.
func TestCheckTaskName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"train", true},
		{"my task.v2", true},
		{"../../../../etc", false},
		{"a/b", false},
		{`a\b`, false},
		{".", false},
		{"..", false},
		{"alloc", false},
		{"nul\x00", false},
		{strings.Repeat("x", 129), false},
		{"", false},
	}
	for _, tt := range tests {
		err := CheckTaskName(tt.name)
		if got := err == nil; got != tt.ok {
			t.Errorf("CheckTaskName(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
		task := &Task{Name: tt.name, Driver: "exec"}
		if got := task.Validate() == nil; got != tt.ok {
			t.Errorf("Task{Name: %q}.Validate() ok = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

// A system or sysbatch job places one allocation per node, all with name
// index 0, and its scheduler ignores gangs: a gang or distributed block
// there would hand every allocation rank 0 of a world of 1 with another
// node's address, so it is refused.
func TestJobValidateRefusesRendezvousInSystemJobs(t *testing.T) {
	for _, typ := range []string{JobTypeSystem, JobTypeSysBatch} {
		for name, set := range map[string]func(*TaskGroup){
			"gang":        func(tg *TaskGroup) { tg.Gang = &Gang{} },
			"distributed": func(tg *TaskGroup) { tg.Distributed = &DistributedConfig{} },
		} {
			j := testJob()
			j.Type = typ
			set(j.TaskGroups[0])
			j.Canonicalize()
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), "not supported in a "+typ+" job") {
				t.Errorf("%s job with a %s block: %v, want refused", typ, name, err)
			}
		}
	}
	j := testJob()
	j.TaskGroups[0].Distributed = &DistributedConfig{}
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		t.Errorf("batch job with a distributed block: %v", err)
	}
}
