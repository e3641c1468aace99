package allocrunner

import (
	"maps"
	"strconv"
	"strings"

	"github.com/droverhq/drover/structs"
)

// Environment variables the client sets for every task. Each DROVER_ name
// also has its NOMAD_ twin so tools written for Nomad work unchanged.
const (
	EnvAllocID     = "ALLOC_ID"
	EnvAllocName   = "ALLOC_NAME"
	EnvAllocIndex  = "ALLOC_INDEX"
	EnvAllocDir    = "ALLOC_DIR"
	EnvTaskDir     = "TASK_DIR"
	EnvJobID       = "JOB_ID"
	EnvJobName     = "JOB_NAME"
	EnvGroupName   = "GROUP_NAME"
	EnvTaskName    = "TASK_NAME"
	EnvNamespace   = "NAMESPACE"
	EnvRegion      = "REGION"
	EnvCPULimit    = "CPU_LIMIT"
	EnvMemoryLimit = "MEMORY_LIMIT"

	// NVIDIA_VISIBLE_DEVICES is read by the NVIDIA container runtime,
	// CUDA_VISIBLE_DEVICES by CUDA itself; both take GPU UUIDs.
	EnvNvidiaVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	EnvCUDAVisibleDevices   = "CUDA_VISIBLE_DEVICES"
)

// envPrefixes are the prefixes each variable above is set under.
var envPrefixes = []string{"DROVER_", "NOMAD_"}

// NoGPUs is NVIDIA_VISIBLE_DEVICES for a task that holds no GPU: the
// NVIDIA container runtime then exposes none (CUDA_VISIBLE_DEVICES is
// set empty, which hides every GPU from CUDA).
const NoGPUs = "void"

// TaskEnv builds a task's environment: the task's own env block,
// interpolated against Drover's variables, then Drover's variables, which
// win (a task cannot pretend to be another allocation or widen its GPUs).
//
// GPU visibility: NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES list the
// UUIDs of the NVIDIA GPUs assigned to this task, comma-separated, in the
// order the scheduler assigned them. A task assigned none gets "void" and
// "" so that raw_exec, which isolates nothing, still does not let it use
// GPUs another allocation holds.
func TaskEnv(alloc *structs.Allocation, task *structs.Task, allocDir, taskDir string) map[string]string {
	return TaskEnvOn(alloc, task, allocDir, taskDir, nil)
}

// TaskEnvOn is TaskEnv on node: the task's env block may interpolate
// the node's values too (${node.unique.name}, ${attr.x}, ${meta.x}).
func TaskEnvOn(alloc *structs.Allocation, task *structs.Task, allocDir, taskDir string, node *structs.Node) map[string]string {
	vars := map[string]string{
		EnvAllocID:    alloc.ID,
		EnvAllocName:  alloc.Name,
		EnvAllocIndex: strconv.Itoa(alloc.Index()),
		EnvAllocDir:   SharedDir(allocDir),
		EnvTaskDir:    taskDir,
		EnvGroupName:  alloc.TaskGroup,
		EnvTaskName:   task.Name,
		EnvJobID:      alloc.JobID,
		EnvNamespace:  alloc.Namespace,
	}
	if j := alloc.Job; j != nil {
		vars[EnvJobName] = j.Name
		vars[EnvRegion] = j.Region
	}
	if res := taskResources(alloc, task.Name); res != nil {
		vars[EnvCPULimit] = strconv.FormatInt(res.Cpu.CpuShares, 10)
		vars[EnvMemoryLimit] = strconv.FormatInt(res.Memory.MemoryMB, 10)
	}
	maps.Copy(vars, portVars(alloc)) // env_ports.go
	own := metaEnv(alloc, task)      // dispatch.go
	for k, v := range vars {
		for _, p := range envPrefixes {
			own[p+k] = v
		}
	}
	if gpus := GPUIDs(alloc, task.Name); len(gpus) > 0 {
		own[EnvNvidiaVisibleDevices] = strings.Join(gpus, ",")
		own[EnvCUDAVisibleDevices] = strings.Join(gpus, ",")
	} else {
		own[EnvNvidiaVisibleDevices] = NoGPUs
		own[EnvCUDAVisibleDevices] = ""
	}

	env := make(map[string]string, len(task.Env)+len(own))
	rt := Runtime{Env: own, Node: node}
	for k, v := range task.Env {
		// The MPS pipe and limits are the client's (gpu_sharing.go): a
		// job setting them could reach another allocation's MPS daemon
		// or lift its own share's limits.
		if strings.HasPrefix(k, "CUDA_MPS_") {
			continue
		}
		env[k] = rt.Interpolate(v)
	}
	maps.Copy(env, own)
	return env
}

// GPUIDs returns the UUIDs of the NVIDIA GPUs assigned to the task, in
// assignment order.
func GPUIDs(alloc *structs.Allocation, task string) []string {
	res := taskResources(alloc, task)
	if res == nil {
		return nil
	}
	var ids []string
	for _, d := range res.Devices {
		if strings.EqualFold(d.Vendor, "nvidia") && d.Type == "gpu" {
			ids = append(ids, d.DeviceIDs...)
		}
	}
	return ids
}

// DeviceIDs returns every device instance assigned to the task.
func DeviceIDs(alloc *structs.Allocation, task string) []string {
	res := taskResources(alloc, task)
	if res == nil {
		return nil
	}
	var ids []string
	for _, d := range res.Devices {
		ids = append(ids, d.DeviceIDs...)
	}
	return ids
}

func taskResources(alloc *structs.Allocation, task string) *structs.AllocatedTaskResources {
	if alloc.AllocatedResources == nil {
		return nil
	}
	return alloc.AllocatedResources.Tasks[task]
}

// Interpolate replaces ${NAME} with env[NAME] (see Runtime for the node
// values too). Unknown names are left as written, so a typo shows up in
// the task's output rather than vanishing.
func Interpolate(s string, env map[string]string) string {
	return Runtime{Env: env}.Interpolate(s)
}

// InterpolateConfig returns a copy of a driver config with every string,
// in nested lists and maps too, interpolated against env.
func InterpolateConfig(cfg map[string]any, env map[string]string) map[string]any {
	return Runtime{Env: env}.Config(cfg)
}
