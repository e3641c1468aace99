package jobspec

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

// inSpread places body lines inside a group's spread block, starting at
// line 5, column 7.
func inSpread(body string) string {
	return inGroup("spread {\n      " + body + "\n    }")
}

func TestSpreadErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "missing attribute",
			src:  inSpread("weight = 10"),
			want: `job.hcl:4,5: Missing required argument; The argument "attribute" is required in a spread block, but no definition was found.`,
		},
		{
			name: "weight zero",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      weight = 0"),
			want: "job.hcl:6,16: Invalid value; weight = 0 is out of range: want between 1 and 100.",
		},
		{
			name: "weight negative",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      weight = -1"),
			want: "job.hcl:6,16: Invalid value; weight = -1 is out of range: want between 1 and 100.",
		},
		{
			name: "weight above 100",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      weight = 101"),
			want: "job.hcl:6,16: Invalid value; weight = 101 is out of range: want between 1 and 100.",
		},
		{
			name: "percents above 100",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      target \"dc1\" { percent = 70 }\n      target \"dc2\" { percent = 40 }"),
			want: "job.hcl:7,32: Invalid value; The targets' percents add up to 110 here; they must not exceed 100.",
		},
		{
			name: "percent above 100",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      target \"dc1\" { percent = 150 }"),
			want: "job.hcl:6,32: Invalid value; percent = 150 is out of range: want between 0 and 100.",
		},
		{
			name: "duplicate target",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      target \"dc1\" {}\n      target \"dc1\" {}"),
			want: `job.hcl:7,14: Duplicate target; A target "dc1" is already defined at line 6.`,
		},
		{
			name: "empty target value",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      target \"\" {}"),
			want: `job.hcl:6,14: Invalid target; ...`,
		},
		{
			name: "target without value",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      target {}"),
			want: `job.hcl:6,14: Missing value for target; ...`,
		},
		{
			name: "unknown target argument",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      target \"dc1\" { share = 5 }"),
			want: `job.hcl:6,22: Unsupported argument; An argument named "share" is not expected here.`,
		},
		{
			name: "unknown argument",
			src:  inSpread("attribute = \"${node.datacenter}\"\n      operator = \"=\""),
			want: `job.hcl:6,7: Unsupported argument; An argument named "operator" is not expected here.`,
		},
		{
			name: "two spreads over one attribute",
			src:  inGroup("spread { attribute = \"${meta.rack}\" }\n    spread { attribute = \"${meta.rack}\" }"),
			want: `job.hcl:5,5: Duplicate spread; A spread over "${meta.rack}" is already defined at line 4.`,
		},
		{
			name: "job level",
			src:  "job \"x\" {\n  datacenters = [\"dc1\"]\n  spread {\n    weight = \"heavy\"\n  }\n}\n",
			want: `job.hcl:3,3: Missing required argument; ...`,
		},
		{
			name: "in a task",
			src:  inTask(`spread { attribute = "${node.datacenter}" }`),
			want: `job.hcl:6,7: Unsupported block type; Blocks of type "spread" are not expected here.`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFirstError(t, "job.hcl", tt.src, tt.want)
		})
	}
}

func TestSpreadJSON(t *testing.T) {
	tests := []struct {
		name    string
		spread  string
		want    structs.Spread
		wantErr string
	}{
		{
			name:   "weight defaults to 50",
			spread: `{"Attribute": "${node.datacenter}"}`,
			want:   structs.Spread{Attribute: "${node.datacenter}", Weight: 50},
		},
		{
			name:    "weight zero",
			spread:  `{"Attribute": "${node.datacenter}", "Weight": 0}`,
			wantErr: `job.json:1,1: Invalid job; job "x": group "g": spread "${node.datacenter}": weight 0 must be between 1 and 100`,
		},
		{
			name:    "percents above 100",
			spread:  `{"Attribute": "${node.datacenter}", "Weight": 10, "SpreadTarget": [{"Value": "a", "Percent": 60}, {"Value": "b", "Percent": 60}]}`,
			wantErr: `job.json:1,1: Invalid job; job "x": group "g": spread "${node.datacenter}": target percents sum to 120, more than 100`,
		},
		{
			name:    "unknown field",
			spread:  `{"Attribute": "${node.datacenter}", "Targets": [1]}`,
			wantErr: `job.json:1,114: Unknown field; Job.TaskGroups[0].Spreads[0] has no field "Targets" (neither Drover's nor Nomad's).`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `{"ID": "x", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Spreads": [` + tt.spread +
				`], "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`
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
			got := job.TaskGroups[0].Spreads[0]
			if got.Attribute != tt.want.Attribute || got.Weight != tt.want.Weight || len(got.SpreadTarget) != len(tt.want.SpreadTarget) {
				t.Errorf("got %s, want %s", got, &tt.want)
			}
		})
	}
}

// TestParseSpread spells out the spreads of testdata/spread.hcl, so that
// a wrong golden file cannot hide them.
func TestParseSpread(t *testing.T) {
	job, err := ParseFile("testdata/spread.hcl")
	if err != nil {
		t.Fatal(err)
	}
	tg := job.TaskGroups[0]
	tests := []struct {
		name      string
		got, want string
	}{
		{"job spread", job.Spreads[0].String(), "spread ${node.datacenter} (weight 80) dc1=70%, dc2=20%"},
		{"group even spread, default weight", tg.Spreads[0].String(), "spread ${meta.rack} (weight 50)"},
		{"group targets, percent as string and absent", tg.Spreads[1].String(), "spread ${node.class} (weight 10) gpu-large=0%, gpu-small=40%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	if len(job.Spreads) != 1 || len(tg.Spreads) != 2 {
		t.Errorf("got %d job and %d group spreads, want 1 and 2", len(job.Spreads), len(tg.Spreads))
	}
}
