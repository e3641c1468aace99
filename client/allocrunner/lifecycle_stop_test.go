package allocrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/structs"
)

// TestStopDuringEndlessPrestart: a prestart task that never exits keeps
// the main task from starting, yet a stop ends the allocation: the
// prestart task is killed, the main task never starts, and the poststop
// task runs.
func TestStopDuringEndlessPrestart(t *testing.T) {
	d := `"$NOMAD_ALLOC_DIR/data"`
	alloc := testAlloc(structs.JobTypeService, nil,
		hooked(shTask("init", `touch `+d+`/init; exec sleep 600`), structs.TaskLifecycleHookPrestart, false),
		shTask("main", `touch `+d+`/main`),
		hooked(shTask("cleanup", `touch `+d+`/cleanup`), structs.TaskLifecycleHookPoststop, false),
	)
	ar, _ := newRunner(t, alloc)
	go ar.Run()
	data := filepath.Join(SharedDir(ar.AllocDir()), "data")
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(data, "init")); return err == nil })
	ar.Kill("test stop")
	waitDone(t, ar)
	got := ar.Alloc()
	if !startedAt(got, "main").IsZero() {
		t.Errorf("main started after a stop during prestart; %s", describeTasks(got))
	}
	if _, err := os.Stat(filepath.Join(data, "main")); err == nil {
		t.Error("main ran")
	}
	if _, err := os.Stat(filepath.Join(data, "cleanup")); err != nil {
		t.Errorf("poststop did not run: %v", err)
	}
	for name, s := range got.TaskStates {
		if s.State != structs.TaskStateDead {
			t.Errorf("task %s is %s, want dead", name, s.State)
		}
	}
}
