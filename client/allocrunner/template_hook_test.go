package allocrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

// memVars is an in-memory VariableSource whose blocking reads wake on a
// change, as the servers' do.
type memVars struct {
	mu      sync.Mutex
	index   uint64
	vars    map[string]structs.VariableItems
	changed chan struct{}
}

func newMemVars() *memVars {
	return &memVars{index: 1, vars: map[string]structs.VariableItems{}, changed: make(chan struct{})}
}

func (m *memVars) put(path string, items structs.VariableItems) {
	m.mu.Lock()
	m.index++
	m.vars[path] = items
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}

func (m *memVars) wait(ctx context.Context, minIndex uint64, wait time.Duration) uint64 {
	for {
		m.mu.Lock()
		idx, ch := m.index, m.changed
		m.mu.Unlock()
		if minIndex == 0 || idx > minIndex {
			return idx
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return idx
		case <-time.After(wait):
			return idx
		}
	}
}

func (m *memVars) ReadVariable(ctx context.Context, _, _, path string, minIndex uint64, wait time.Duration) (*structs.VariableDecrypted, uint64, error) {
	idx := m.wait(ctx, minIndex, wait)
	m.mu.Lock()
	defer m.mu.Unlock()
	items, ok := m.vars[path]
	if !ok {
		return nil, idx, nil
	}
	return &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: path, ModifyIndex: idx}, Items: items}, idx, nil
}

func (m *memVars) ListVariables(ctx context.Context, _, _, prefix string, minIndex uint64, wait time.Duration) ([]*structs.VariableDecrypted, uint64, error) {
	return nil, m.wait(ctx, minIndex, wait), nil
}

func templateRunner(t *testing.T, vars VariableSource, task *structs.Task) *AllocRunner {
	t.Helper()
	ar, err := New(&Config{
		Alloc:     testAlloc(structs.JobTypeService, nil, task),
		DataDir:   drivertest.ReachableTempDir(t),
		Drivers:   map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
		OnUpdate:  func(*structs.Allocation) {},
		TaskFiles: TaskFilesConfig{Variables: vars},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ar
}

func readTaskFile(ar *AllocRunner, rel string) string {
	b, _ := os.ReadFile(filepath.Join(TaskDir(ar.AllocDir(), "t"), rel))
	return string(b)
}

// TestTemplateChangeModes: a template waits for its variable, renders it
// into the task's env, and on a change is rewritten: signal sends the
// signal without a restart, noop only rewrites.
func TestTemplateChangeModes(t *testing.T) {
	vars := newMemVars()
	task := shTask("t", `trap 'echo hup >> hups' HUP; echo "start $APP_MODE" >> runs; while true; do sleep 0.05; done`)
	task.Templates = []*structs.Template{
		{EmbeddedTmpl: `APP_MODE={{ with nomadVar "nomad/jobs/job1" }}{{ .mode }}{{ end }}`, DestPath: "local/app.env", Envvars: true,
			ChangeMode: structs.TemplateChangeModeSignal, ChangeSignal: "SIGHUP"},
		{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/job1/g" }}{{ .note }}{{ end }}`, DestPath: "local/note", ChangeMode: structs.TemplateChangeModeNoop},
	}
	ar := templateRunner(t, vars, task)
	go ar.Run()
	defer waitDone(t, ar)
	defer ar.Kill("test over")

	// Missing variables: the task waits.
	waitFor(t, func() bool {
		for _, ev := range ar.Alloc().TaskStates["t"].Events {
			if ev.Type == TaskTemplateMissing {
				return true
			}
		}
		return false
	})
	vars.put("nomad/jobs/job1", structs.VariableItems{"mode": "fast"})
	vars.put("nomad/jobs/job1/g", structs.VariableItems{"note": "v1"})
	waitFor(t, func() bool { return readTaskFile(ar, "runs") == "start fast\n" })

	vars.put("nomad/jobs/job1", structs.VariableItems{"mode": "slow"})
	waitFor(t, func() bool { return strings.Contains(readTaskFile(ar, "hups"), "hup") })
	if got := readTaskFile(ar, "local/app.env"); got != "APP_MODE=slow" {
		t.Errorf("app.env = %q after the change", got)
	}
	vars.put("nomad/jobs/job1/g", structs.VariableItems{"note": "v2"})
	waitFor(t, func() bool { return readTaskFile(ar, "local/note") == "v2" })
	if runs := readTaskFile(ar, "runs"); runs != "start fast\n" {
		t.Errorf("runs = %q: signal and noop must not restart the task", runs)
	}
	if hups := strings.Count(readTaskFile(ar, "hups"), "hup"); hups != 1 {
		t.Errorf("%d SIGHUPs, want 1 (noop sends none)", hups)
	}
}

// TestTemplateRefusals: a Consul function fails the task at once, with
// a message naming Consul.
func TestTemplateRefusals(t *testing.T) {
	task := shTask("t", "exit 0")
	task.Templates = []*structs.Template{{EmbeddedTmpl: `{{ key "a/b" }}`, DestPath: "local/x"}}
	ar := templateRunner(t, newMemVars(), task)
	got := runToEnd(t, ar)
	st := got.TaskStates["t"]
	var msg string
	for _, ev := range st.Events {
		if ev.Type == TaskTemplateFailed {
			msg = ev.Message
		}
	}
	if got.ClientStatus != structs.AllocClientStatusFailed || !strings.Contains(msg, "needs Consul") {
		t.Errorf("status %s, template event %q; want failed naming Consul (events %v)", got.ClientStatus, msg, eventTypes(st))
	}
}

// TestTemplateEnvKeepsNodeInterpolation: with an env = true template,
// the driver config is interpolated again with the template's variables
// and still resolves ${node.*} and ${attr.*}.
func TestTemplateEnvKeepsNodeInterpolation(t *testing.T) {
	task := shTask("t", "")
	task.Config["args"] = []any{"-c", `echo "$0 $1 $2" > out`, "${node.unique.name}", "${attr.kernel.name}", "${MODE}"}
	task.Templates = []*structs.Template{{EmbeddedTmpl: "MODE=fast\n", DestPath: "local/app.env", Envvars: true}}
	ar, err := New(&Config{
		Alloc:     testAlloc(structs.JobTypeBatch, noRestarts, task),
		DataDir:   drivertest.ReachableTempDir(t),
		Drivers:   map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
		OnUpdate:  func(*structs.Allocation) {},
		TaskFiles: TaskFilesConfig{Variables: newMemVars()},
		Node:      &structs.Node{ID: "n1", Name: "gpu-7", Attributes: map[string]string{"kernel.name": "linux"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := runToEnd(t, ar)
	if got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q; %s", got.ClientStatus, describeTasks(got))
	}
	if out := readTaskFile(ar, "out"); out != "gpu-7 linux fast\n" {
		t.Errorf("args = %q, want %q", out, "gpu-7 linux fast\n")
	}
}

// TestTemplateEnvCannotWidenGPUs: an env = true template does not
// override the GPU visibility variables nor the allocation's own
// DROVER_/NOMAD_ values; its other variables reach the task.
func TestTemplateEnvCannotWidenGPUs(t *testing.T) {
	task := shTask("t", `test "$NVIDIA_VISIBLE_DEVICES" = void && test -z "$CUDA_VISIBLE_DEVICES" && test "$NOMAD_TASK_NAME" = t && test -z "$CUDA_MPS_PIPE_DIRECTORY" && test "$FOO" = 1`)
	task.Templates = []*structs.Template{{
		EmbeddedTmpl: "NVIDIA_VISIBLE_DEVICES=all\nCUDA_VISIBLE_DEVICES=0,1\nNOMAD_TASK_NAME=other\nCUDA_MPS_PIPE_DIRECTORY=/tmp/x\nFOO=1\n",
		DestPath:     "local/app.env", Envvars: true,
	}}
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
	if got := runToEnd(t, ar); got.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("status %q (the template widened the task's env); %s", got.ClientStatus, describeTasks(got))
	}
}
