package allocrunner

import (
	"testing"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

func TestTaskPathInterpolation(t *testing.T) {
	taskDir := "/data/alloc/a1/web"
	rt := Runtime{
		Env:  map[string]string{"NOMAD_TASK_DIR": taskDir, "DROVER_TASK_DIR": taskDir, "NOMAD_ALLOC_DIR": "/data/alloc/a1/alloc", "MODE": "prod"},
		Node: &structs.Node{Attributes: map[string]string{"kernel.name": "linux"}},
	}
	tests := []struct{ in, want string }{
		{"${NOMAD_SECRETS_DIR}/app.env", "secrets/app.env"},
		{"${NOMAD_TASK_DIR}/local/conf.yml", "local/conf.yml"},
		{"${DROVER_TASK_DIR}", "."},
		{"local/${MODE}.yml", "local/prod.yml"},
		{"${NOMAD_ALLOC_DIR}/x", "/data/alloc/a1/alloc/x"}, // absolute: refused when written
		{"local/${attr.kernel.name}", "local/linux"},
	}
	for _, tt := range tests {
		if got := rt.taskPath(tt.in, taskDir); got != tt.want {
			t.Errorf("taskPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	a := &structs.TaskArtifact{
		GetterSource:  "https://example.com/app_${attr.kernel.name}.tgz",
		RelativeDest:  "${NOMAD_TASK_DIR}/bin",
		GetterOptions: map[string]string{"checksum": "sha256:${MODE}"},
		GetterHeaders: map[string]string{"X-Mode": "${MODE}"},
	}
	got := rt.artifact(a, taskDir)
	if got.GetterSource != "https://example.com/app_linux.tgz" || got.RelativeDest != "bin" ||
		got.GetterOptions["checksum"] != "sha256:prod" || got.GetterHeaders["X-Mode"] != "prod" {
		t.Errorf("artifact = %+v", got)
	}
	if a.GetterSource != "https://example.com/app_${attr.kernel.name}.tgz" || a.GetterHeaders["X-Mode"] != "${MODE}" {
		t.Errorf("the job's artifact changed: %+v", a)
	}
}

// TestTemplateSecretsDirDestination: a template written to
// ${NOMAD_SECRETS_DIR} (as Nomad job files do) lands in <task dir>/secrets.
func TestTemplateSecretsDirDestination(t *testing.T) {
	task := shTask("t", `. ./secrets/app.env && test "$X" = 1`)
	task.Templates = []*structs.Template{{EmbeddedTmpl: "X=1\n", DestPath: "${NOMAD_SECRETS_DIR}/app.env"}}
	ar, err := New(&Config{
		Alloc:     testAlloc(structs.JobTypeBatch, noRestarts, task),
		DataDir:   drivertest.ReachableTempDir(t),
		Drivers:   map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
		OnUpdate:  func(*structs.Allocation) {},
		TaskFiles: TaskFilesConfig{Variables: newMemVars()},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q, secrets/app.env = %q; %s", got.ClientStatus, readTaskFile(ar, "secrets/app.env"), describeTasks(got))
	}
}
