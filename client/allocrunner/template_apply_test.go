package allocrunner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

// startGatedDriver is raw_exec whose Start returns only once gate is closed:
// the task's process runs, but its runner does not know it yet.
type startGatedDriver struct {
	*rawexec.Driver
	gate chan struct{}
}

func (d *startGatedDriver) Start(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	h, err := d.Driver.Start(ctx, cfg)
	<-d.gate
	return h, err
}

// TestTemplateChangeWhileStarting: a variable that changes after the
// prestart render, while the task is starting, still reaches the task:
// the signal waits until the task runs instead of being dropped.
func TestTemplateChangeWhileStarting(t *testing.T) {
	vars := newMemVars()
	vars.put("nomad/jobs/job1", structs.VariableItems{"mode": "fast"})
	task := shTask("t", `trap 'echo hup >> hups' HUP; echo "start $APP_MODE" >> runs; while true; do sleep 0.05; done`)
	task.Templates = []*structs.Template{{
		EmbeddedTmpl: `APP_MODE={{ with nomadVar "nomad/jobs/job1" }}{{ .mode }}{{ end }}`, DestPath: "local/app.env", Envvars: true,
		ChangeMode: structs.TemplateChangeModeSignal, ChangeSignal: "SIGHUP",
	}}
	gate := make(chan struct{})
	ar, err := New(&Config{
		Alloc:     testAlloc(structs.JobTypeService, nil, task),
		DataDir:   drivertest.ReachableTempDir(t),
		Drivers:   map[string]drivers.Driver{"raw_exec": &startGatedDriver{Driver: rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true}), gate: gate}},
		OnUpdate:  func(*structs.Allocation) {},
		TaskFiles: TaskFilesConfig{Variables: vars},
	})
	if err != nil {
		t.Fatal(err)
	}
	go ar.Run()
	defer waitDone(t, ar)
	defer ar.Kill("test over")
	waitFor(t, func() bool { return readTaskFile(ar, "runs") == "start fast\n" })
	vars.put("nomad/jobs/job1", structs.VariableItems{"mode": "slow"})
	waitFor(t, func() bool {
		return slices.Contains(eventTypes(ar.Alloc().TaskStates["t"]), TaskTemplateRerendered)
	})
	close(gate)
	waitFor(t, func() bool { return strings.Contains(readTaskFile(ar, "hups"), "hup") })
}
