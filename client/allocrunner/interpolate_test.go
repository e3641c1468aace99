package allocrunner

import (
	"reflect"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestRuntimeInterpolate(t *testing.T) {
	rt := Runtime{
		Env: map[string]string{"NOMAD_ALLOC_ID": "a1", "NOMAD_META_x": "mx", "HOME": "/root"},
		Node: &structs.Node{ID: "n-id", Name: "gpu-7", Datacenter: "dc2", NodeClass: "h100",
			Attributes: map[string]string{"kernel.name": "linux", "unique.hostname": "host7"},
			Meta:       map[string]string{"rack": "r4"}},
	}
	tests := []struct {
		in, want string
	}{
		{"${NOMAD_ALLOC_ID}", "a1"},
		{"${ NOMAD_ALLOC_ID }", "a1"},
		{`${env["HOME"]}/x`, "/root/x"},
		{"${node.unique.id} ${node.unique.name} ${node.datacenter} ${node.class} ${node.pool}", "n-id gpu-7 dc2 h100 default"},
		{"${attr.kernel.name}-${attr.unique.hostname}", "linux-host7"},
		{"${meta.rack}/${NOMAD_META_x}", "r4/mx"},
		{"${attr.missing} ${meta.missing} ${UNKNOWN} ${var.x} ${node.other}", "${attr.missing} ${meta.missing} ${UNKNOWN} ${var.x} ${node.other}"},
		{`${env["NOPE"]}`, `${env["NOPE"]}`},
		{"$${not} ${", "$${not} ${"},
		{"plain", "plain"},
	}
	for _, tt := range tests {
		if got := rt.Interpolate(tt.in); got != tt.want {
			t.Errorf("Interpolate(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Without a node, node values stay as written.
	if got := (Runtime{Env: rt.Env}).Interpolate("${node.unique.name} ${NOMAD_ALLOC_ID}"); got != "${node.unique.name} a1" {
		t.Errorf("no node: got %q", got)
	}
}

func TestRuntimeConfig(t *testing.T) {
	rt := Runtime{Env: map[string]string{"NOMAD_TASK_NAME": "t"}, Node: &structs.Node{Name: "n1", Attributes: map[string]string{"kernel.name": "linux"}}}
	cfg := map[string]any{
		"command": "/bin/sh",
		"args":    []any{"-c", "echo ${node.unique.name} ${attr.kernel.name}"},
		"nested":  map[string]any{"list": []any{1, "${NOMAD_TASK_NAME}"}, "strs": []string{"${node.unique.name}"}},
		"n":       3,
	}
	want := map[string]any{
		"command": "/bin/sh",
		"args":    []any{"-c", "echo n1 linux"},
		"nested":  map[string]any{"list": []any{1, "t"}, "strs": []string{"n1"}},
		"n":       3,
	}
	got := rt.Config(cfg)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	if cfg["args"].([]any)[1] != "echo ${node.unique.name} ${attr.kernel.name}" {
		t.Errorf("the job's config was changed in place: %v", cfg["args"])
	}
}

func TestTaskEnvOnNodeAndMeta(t *testing.T) {
	job := &structs.Job{ID: "j", Name: "j", Meta: map[string]string{"owner": "job", "x": "job"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Meta: map[string]string{"x": "group"}}}}
	task := &structs.Task{Name: "t", Meta: map[string]string{"Tier": "task"},
		Env: map[string]string{"WHERE": "${node.unique.name}@${node.datacenter}", "M": "${NOMAD_META_x}/${NOMAD_META_TIER}"}}
	alloc := &structs.Allocation{ID: "a", JobID: "j", TaskGroup: "g", Job: job}
	env := TaskEnvOn(alloc, task, t.TempDir(), t.TempDir(), &structs.Node{Name: "gpu-1", Datacenter: "dc1"})
	for k, want := range map[string]string{
		"WHERE": "gpu-1@dc1", "M": "group/task",
		"NOMAD_META_owner": "job", "NOMAD_META_OWNER": "job", "DROVER_META_x": "group", "NOMAD_META_Tier": "task",
	} {
		if env[k] != want {
			t.Errorf("env[%s] = %q, want %q", k, env[k], want)
		}
	}
}
