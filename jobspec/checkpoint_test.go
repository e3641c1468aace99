package jobspec

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

// inCkptGroup places body lines inside group "g" of a valid batch job, at
// line 4, column 5.
func inCkptGroup(body string) string {
	return "job \"x\" {\n" + // 1
		"  datacenters = [\"dc1\"]\n" + // 2
		"  group \"g\" {\n" + // 3
		"    " + body + "\n" + // 4
		"    task \"t\" {\n      driver = \"raw_exec\"\n    }\n  }\n}\n"
}

func TestParseCheckpoint(t *testing.T) {
	job, err := Parse("job.hcl", []byte(inCkptGroup(`checkpoint {
      path = "/ckpt"
      keep = 3
    }`)))
	if err != nil {
		t.Fatal(err)
	}
	got := job.TaskGroups[0].Checkpoint
	want := structs.CheckpointConfig{Path: "/ckpt", Keep: 3}
	if got == nil || *got != want {
		t.Fatalf("checkpoint = %+v, want %+v", got, want)
	}
	job, err = Parse("job.hcl", []byte(inCkptGroup(`checkpoint {}`)))
	if err != nil {
		t.Fatal(err)
	}
	if got := job.TaskGroups[0].Checkpoint; got == nil || *got != (structs.CheckpointConfig{}) {
		t.Fatalf("empty checkpoint = %+v, want a zero block", got)
	}
}

func TestParseCheckpointErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"relative path", inCkptGroup(`checkpoint { path = "ckpt" }`),
			`job.hcl:4,25: Invalid checkpoint path; checkpoint path "ckpt" must be absolute.`},
		{"unclean path", inCkptGroup(`checkpoint { path = "/a/../b" }`),
			`job.hcl:4,25: Invalid checkpoint path; checkpoint path "/a/../b" must be clean and not /.`},
		{"negative keep", inCkptGroup(`checkpoint { keep = -1 }`),
			`job.hcl:4,25: Invalid value; ...`},
		{"unknown argument", inCkptGroup(`checkpoint { every = "1m" }`),
			`job.hcl:4,18: Unsupported argument; An argument named "every" is not expected here.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFirstError(t, "job.hcl", tt.src, tt.want)
		})
	}
}

func TestParseCheckpointJSON(t *testing.T) {
	src := `{"Job": {"ID": "x", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g",
  "Checkpoint": {"Path": "/ckpt", "Keep": 3},
  "Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}}`
	job, err := Parse("job.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := job.TaskGroups[0].Checkpoint; got == nil || *got != (structs.CheckpointConfig{Path: "/ckpt", Keep: 3}) {
		t.Fatalf("checkpoint = %+v, want /ckpt keep 3", got)
	}
	bad := strings.Replace(src, `"Keep": 3`, `"Keep": -1`, 1)
	if _, err := Parse("job.json", []byte(bad)); err == nil || !strings.Contains(err.Error(), "checkpoint keep -1") {
		t.Errorf("keep -1: %v, want an error naming it", err)
	}
}
