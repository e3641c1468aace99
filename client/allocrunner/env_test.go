package allocrunner

import (
	"reflect"
	"testing"

	"github.com/droverhq/drover/structs"
)

func envAlloc(devices ...*structs.AllocatedDeviceResource) *structs.Allocation {
	return &structs.Allocation{
		ID: "a1", Name: "train.workers[3]", Namespace: "default", JobID: "train", TaskGroup: "workers",
		Job: &structs.Job{ID: "train", Name: "train-name", Region: "global"},
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"main": {
				Cpu:     structs.AllocatedCpuResources{CpuShares: 4000},
				Memory:  structs.AllocatedMemoryResources{MemoryMB: 2048},
				Devices: devices,
			},
		}},
	}
}

func TestTaskEnv(t *testing.T) {
	gpus := &structs.AllocatedDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"GPU-b", "GPU-a"}}
	more := &structs.AllocatedDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "A100", DeviceIDs: []string{"GPU-c"}}
	fpga := &structs.AllocatedDeviceResource{Vendor: "xilinx", Type: "fpga", Name: "U250", DeviceIDs: []string{"FPGA-1"}}
	tests := []struct {
		name    string
		alloc   *structs.Allocation
		taskEnv map[string]string
		want    map[string]string
	}{
		{
			name:  "two GPUs in assigned order",
			alloc: envAlloc(gpus),
			want:  map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-b,GPU-a", "CUDA_VISIBLE_DEVICES": "GPU-b,GPU-a"},
		},
		{
			name:  "GPUs of two groups, other devices ignored",
			alloc: envAlloc(gpus, fpga, more),
			want:  map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-b,GPU-a,GPU-c"},
		},
		{
			name:  "no GPUs hides them all",
			alloc: envAlloc(),
			want:  map[string]string{"NVIDIA_VISIBLE_DEVICES": "void", "CUDA_VISIBLE_DEVICES": ""},
		},
		{
			name:  "identity, dirs and limits, Drover and Nomad names",
			alloc: envAlloc(),
			want: map[string]string{
				"DROVER_ALLOC_ID": "a1", "NOMAD_ALLOC_ID": "a1",
				"DROVER_ALLOC_NAME": "train.workers[3]", "DROVER_ALLOC_INDEX": "3", "NOMAD_ALLOC_INDEX": "3",
				"DROVER_JOB_ID": "train", "DROVER_JOB_NAME": "train-name", "NOMAD_JOB_NAME": "train-name",
				"DROVER_GROUP_NAME": "workers", "DROVER_TASK_NAME": "main", "NOMAD_TASK_NAME": "main",
				"DROVER_NAMESPACE": "default", "DROVER_REGION": "global",
				"DROVER_ALLOC_DIR": "/d/alloc/a1/alloc", "NOMAD_ALLOC_DIR": "/d/alloc/a1/alloc",
				"DROVER_TASK_DIR": "/d/alloc/a1/main", "NOMAD_TASK_DIR": "/d/alloc/a1/main",
				"DROVER_CPU_LIMIT": "4000", "DROVER_MEMORY_LIMIT": "2048",
			},
		},
		{
			name:    "task env interpolated, cannot override Drover's",
			alloc:   envAlloc(gpus),
			taskEnv: map[string]string{"OUT": "${NOMAD_ALLOC_DIR}/out", "DROVER_ALLOC_ID": "spoof", "CUDA_VISIBLE_DEVICES": "0,1,2,3", "KEEP": "${NOPE}"},
			want:    map[string]string{"OUT": "/d/alloc/a1/alloc/out", "DROVER_ALLOC_ID": "a1", "CUDA_VISIBLE_DEVICES": "GPU-b,GPU-a", "KEEP": "${NOPE}"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := &structs.Task{Name: "main", Env: tt.taskEnv}
			env := TaskEnv(tt.alloc, task, "/d/alloc/a1", "/d/alloc/a1/main")
			for k, want := range tt.want {
				got, ok := env[k]
				if !ok || got != want {
					t.Errorf("%s = %q (set %v), want %q", k, got, ok, want)
				}
			}
		})
	}
}

func TestInterpolate(t *testing.T) {
	env := map[string]string{"A": "1", "NOMAD_TASK_DIR": "/t", "X.Y": "dot"}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"${A}", "1"},
		{"${A}-${A}", "1-1"},
		{"${NOMAD_TASK_DIR}/bin", "/t/bin"},
		{"${X.Y}", "dot"},
		{"${MISSING}", "${MISSING}"},
		{"$A ${ A}", "$A 1"}, // spaces inside the braces, as HCL allows
		{"${A", "${A"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Interpolate(tt.in, env); got != tt.want {
				t.Errorf("Interpolate(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestInterpolateConfig(t *testing.T) {
	env := map[string]string{"D": "/dir"}
	in := map[string]any{
		"command": "${D}/run",
		"args":    []any{"-o", "${D}/out", 3},
		"strs":    []string{"${D}"},
		"nested":  map[string]any{"k": "${D}"},
		"n":       2,
	}
	got := InterpolateConfig(in, env)
	want := map[string]any{
		"command": "/dir/run",
		"args":    []any{"-o", "/dir/out", 3},
		"strs":    []string{"/dir"},
		"nested":  map[string]any{"k": "/dir"},
		"n":       2,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("InterpolateConfig() = %#v, want %#v", got, want)
	}
	if in["command"] != "${D}/run" || in["args"].([]any)[1] != "${D}/out" {
		t.Errorf("InterpolateConfig changed its input: %#v", in)
	}
}

// A job's env cannot point CUDA_MPS_* at another allocation's MPS daemon
// nor set its own share's limits: the client owns them.
func TestTaskEnvDropsMPSSettings(t *testing.T) {
	task := &structs.Task{Name: "main", Env: map[string]string{
		"CUDA_MPS_PIPE_DIRECTORY":           "/var/lib/drover/alloc/other/mps",
		"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "100",
		"KEEP":                              "yes",
	}}
	env := TaskEnv(envAlloc(), task, "/a", "/a/main")
	for _, k := range []string{"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s = %q from the job's env, want it dropped", k, v)
		}
	}
	if env["KEEP"] != "yes" {
		t.Errorf("KEEP = %q, want the job's value", env["KEEP"])
	}
}
