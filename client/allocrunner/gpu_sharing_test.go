package allocrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/client/mps"
	"github.com/droverhq/drover/client/mps/mpstest"
	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/drivertest"
	"github.com/droverhq/drover/drivers/rawexec"
	"github.com/droverhq/drover/structs"
)

// testSharing is a node's GPUs by sharing mode, with real MPS daemons
// (the fake control program) behind StartMPS.
type testSharing struct {
	modes     map[string]string
	simulated map[string]bool
	mps       *mps.Manager
}

func (s *testSharing) Mode(id string) (string, bool)          { return s.modes[id], s.simulated[id] }
func (s *testSharing) StartMPS(gpu, h string) (string, error) { return s.mps.Acquire(gpu, h) }
func (s *testSharing) StopMPS(gpu, h string)                  { _ = s.mps.Release(gpu, h) }
func (s *testSharing) MPSPipeDir(gpu string) string           { return s.mps.PipeDir(gpu) }

var _ GPUSharing = (*testSharing)(nil)

// newSharing returns a testSharing whose MPS daemons are the fake control
// program, and the program's call log.
func newSharing(t *testing.T, modes map[string]string, simulated map[string]bool) (*testSharing, *mpstest.Log) {
	t.Helper()
	control, log := mpstest.Control(t)
	m := mps.New(mps.Config{Dir: filepath.Join(drivertest.ReachableTempDir(t), "mps"), Control: control})
	t.Cleanup(func() { m.Close() })
	return &testSharing{modes: modes, simulated: simulated, mps: m}, log
}

// envTask is a raw_exec task that writes its environment to
// $DROVER_TASK_DIR/env, then waits until the file release exists.
func envTask(name, release string) *structs.Task {
	return shTask(name, `env > "$DROVER_TASK_DIR/env.tmp" && mv "$DROVER_TASK_DIR/env.tmp" "$DROVER_TASK_DIR/env"; while [ ! -e '`+release+`' ]; do sleep 0.05; done`)
}

// sliceAlloc returns an allocation whose one task holds a slice of gpu.
func sliceAlloc(task *structs.Task, gpu string, compute int, memMB uint64) *structs.Allocation {
	a := testAlloc(structs.JobTypeBatch, nil, task)
	a.AllocatedResources.Tasks[task.Name].Devices = []*structs.AllocatedDeviceResource{
		{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3", DeviceIDs: []string{gpu}, Compute: compute, MemoryMB: memMB},
	}
	return a
}

func newSharingRunner(t *testing.T, alloc *structs.Allocation, sharing GPUSharing) (*AllocRunner, string) {
	t.Helper()
	dataDir := drivertest.ReachableTempDir(t)
	ar, err := New(&Config{
		Alloc: alloc, DataDir: dataDir, GPUSharing: sharing,
		// "docker" is raw_exec by another name: only its name matters here.
		Drivers:  map[string]drivers.Driver{"raw_exec": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true}), "docker": rawexec.NewWithConfig(nil, rawexec.Config{Enabled: true})},
		OnUpdate: func(*structs.Allocation) {},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ar, dataDir
}

// taskEnv waits for the env file an envTask writes and parses it.
func taskEnv(t *testing.T, ar *AllocRunner, task string) map[string]string {
	t.Helper()
	path := filepath.Join(TaskDir(ar.AllocDir(), task), "env")
	deadline := time.Now().Add(testTimeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			env := map[string]string{}
			for _, line := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					env[k] = v
				}
			}
			return env
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s wrote no env: %+v", task, ar.Alloc().TaskStates)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shareEvents returns the messages of a task's GPU Share events.
func shareEvents(a *structs.Allocation, task string) []string {
	var out []string
	for _, e := range a.TaskStates[task].Events {
		if e.Type == TaskGPUShare {
			out = append(out, e.Message)
		}
	}
	return out
}

func TestMPSSliceTaskGetsTheLimitsAndTheGPU(t *testing.T) {
	const gpu = "GPU-11111111-2222-3333-4444-555555555555"
	sharing, log := newSharing(t, map[string]string{gpu: structs.SharingMPS}, nil)
	release := filepath.Join(drivertest.ReachableTempDir(t), "release")
	first, _ := newSharingRunner(t, sliceAlloc(envTask("train", release), gpu, 25, 20<<10), sharing)
	second, _ := newSharingRunner(t, sliceAlloc(envTask("train", release+"-2"), gpu, 50, 40<<10), sharing)
	go first.Run()
	go second.Run()
	defer func() {
		first.Kill("test over")
		second.Kill("test over")
		waitDone(t, first)
		waitDone(t, second)
	}()

	env := taskEnv(t, first, "train")
	want := map[string]string{
		"NVIDIA_VISIBLE_DEVICES":            gpu,
		"CUDA_VISIBLE_DEVICES":              gpu,
		"CUDA_MPS_PIPE_DIRECTORY":           sharing.mps.PipeDir(gpu),
		"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT":  "0=20480M",
		"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("first task env %s: got %q, want %q", k, env[k], v)
		}
	}
	if env2 := taskEnv(t, second, "train"); env2["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] != "0=40960M" || env2["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] != "50" || env2["CUDA_MPS_PIPE_DIRECTORY"] != want["CUDA_MPS_PIPE_DIRECTORY"] {
		t.Errorf("second task env: got %v", env2)
	}
	// One daemon for the GPU, for both allocations.
	if got := log.Lines(); len(got) != 1 || got[0] != "start gpu="+gpu+" pipe="+sharing.mps.PipeDir(gpu)+" log="+sharing.mps.LogDir(gpu) {
		t.Fatalf("MPS calls: got %q, want one start for %s", got, gpu)
	}
	if ev := shareEvents(first.Alloc(), "train"); len(ev) != 1 || !strings.Contains(ev[0], "enforced by MPS on GPU "+gpu) || !strings.Contains(ev[0], "20 GiB GPU memory, 25% compute") {
		t.Errorf("events: got %q", ev)
	}

	// The first allocation ends: the daemon stays for the second.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitDone(t, first)
	if got := first.Alloc().ClientStatus; got != structs.AllocClientStatusComplete {
		t.Fatalf("first: got status %s, want complete", got)
	}
	if n := log.Count("quit"); n != 0 || len(sharing.mps.Running()) != 1 {
		t.Fatalf("daemon stopped while a slice still runs: quits %d, running %v", n, sharing.mps.Running())
	}
	// The last ends: the daemon is stopped.
	if err := os.WriteFile(release+"-2", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitDone(t, second)
	log.WaitCount(t, "quit gpu="+gpu, 1, testTimeout)
	log.WaitCount(t, "exit gpu="+gpu, 1, testTimeout)
	if r := sharing.mps.Running(); len(r) != 0 {
		t.Errorf("running daemons: %v", r)
	}
}

func TestSharingModesWithoutADaemon(t *testing.T) {
	const (
		simGPU = "GPU-sim"
		tsGPU  = "GPU-ts"
		mig    = "MIG-7a1c2e4b-0000-4000-8000-000000000001"
	)
	sharing, log := newSharing(t,
		map[string]string{simGPU: structs.SharingMPS, tsGPU: structs.SharingTimeSlicing, mig: structs.SharingMIG},
		map[string]bool{simGPU: true})
	tests := []struct {
		name    string
		alloc   func(*structs.Task) *structs.Allocation
		env     map[string]string // "" values must be absent
		event   string
		nothing bool // no MPS variable at all
	}{
		{
			name:  "simulated GPU in mps mode: limits, no daemon, said so",
			alloc: func(t *structs.Task) *structs.Allocation { return sliceAlloc(t, simGPU, 0, 20<<10) },
			env: map[string]string{"CUDA_VISIBLE_DEVICES": simGPU, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=20480M",
				"CUDA_MPS_PIPE_DIRECTORY": sharing.mps.PipeDir(simGPU), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": ""},
			event: "GPU share on simulated GPU GPU-sim: MPS simulated, no MPS daemon started; limits set in the environment: 20 GiB GPU memory",
		},
		{
			name:    "time-slicing: accounted, not enforced",
			alloc:   func(t *structs.Task) *structs.Allocation { return sliceAlloc(t, tsGPU, 25, 20<<10) },
			env:     map[string]string{"CUDA_VISIBLE_DEVICES": tsGPU},
			event:   "GPU share accounted, not enforced (time-slicing): 20 GiB GPU memory, 25% compute of GPU GPU-ts",
			nothing: true,
		},
		{
			name:    "mig: the instance's UUID only",
			alloc:   func(t *structs.Task) *structs.Allocation { return sliceAlloc(t, mig, 0, 0) },
			env:     map[string]string{"CUDA_VISIBLE_DEVICES": mig, "NVIDIA_VISIBLE_DEVICES": mig},
			event:   "GPU share enforced by MIG: the task sees only MIG instance " + mig,
			nothing: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := filepath.Join(drivertest.ReachableTempDir(t), "release")
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			ar, _ := newSharingRunner(t, tt.alloc(envTask("train", release)), sharing)
			a := runToEnd(t, ar)
			env := taskEnv(t, ar, "train")
			for k, v := range tt.env {
				if got, ok := env[k]; got != v || (v == "" && ok) {
					t.Errorf("env %s: got %q (set %v), want %q", k, got, ok, v)
				}
			}
			for k := range env {
				if tt.nothing && strings.HasPrefix(k, "CUDA_MPS_") {
					t.Errorf("env has %s=%s, want no MPS variable", k, env[k])
				}
			}
			if ev := shareEvents(a, "train"); len(ev) != 1 || ev[0] != tt.event {
				t.Errorf("events: got %q, want [%q]", ev, tt.event)
			}
			if a.ClientStatus != structs.AllocClientStatusComplete {
				t.Errorf("status: got %s, want complete", a.ClientStatus)
			}
		})
	}
	if got := log.Lines(); len(got) != 0 {
		t.Errorf("MPS calls: got %q, want none (no real MPS GPU)", got)
	}
}

func TestSliceThatCannotBeEnforcedFailsTheAllocation(t *testing.T) {
	dir := drivertest.ReachableTempDir(t)
	broken := filepath.Join(dir, "broken-mps-control")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho 'MPS is not supported on this GPU' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := mps.New(mps.Config{Dir: filepath.Join(dir, "mps"), Control: broken})
	sharing := &testSharing{modes: map[string]string{"GPU-x": structs.SharingExclusive, "GPU-m": structs.SharingMPS}, mps: m}
	tests := []struct{ name, gpu, driver, want string }{
		{"slice of an exclusive GPU", "GPU-x", "raw_exec", "GPU GPU-x is exclusive on this node and takes no slices"},
		{"MPS daemon does not start", "GPU-m", "raw_exec", "MPS is not supported on this GPU"},
		{"driver that cannot reach the daemon", "GPU-m", "docker", `driver "docker" cannot reach GPU GPU-m's MPS daemon`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := shTask("train", "exit 0")
			task.Driver = tt.driver
			ar, _ := newSharingRunner(t, sliceAlloc(task, tt.gpu, 25, 0), sharing)
			a := runToEnd(t, ar)
			if a.ClientStatus != structs.AllocClientStatusFailed || !strings.Contains(a.ClientDescription, tt.want) {
				t.Errorf("got %s %q, want failed with %q", a.ClientStatus, a.ClientDescription, tt.want)
			}
			if types := eventTypes(a.TaskStates["train"]); !strings.Contains(strings.Join(types, ","), TaskSetupFailure) {
				t.Errorf("events: got %v, want a setup failure", types)
			}
		})
	}
}
