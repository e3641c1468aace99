package allocrunner

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/droverhq/drover/structs"
)

// TaskGPUShare is the task event that says how the GPU shares (and MIG
// instances) a task holds are enforced on this node.
const TaskGPUShare = "GPU Share"

// Environment variables of an MPS client (the names NVIDIA's MPS reads).
const (
	EnvMPSPipeDirectory          = "CUDA_MPS_PIPE_DIRECTORY"
	EnvMPSPinnedDeviceMemLimit   = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
	EnvMPSActiveThreadPercentage = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
)

// GPUSharing is what the node knows and runs for the GPU shares its
// allocations hold. The client implements it with its GPUs' sharing
// attributes (client/devices/sharing) and MPS daemons (client/mps).
type GPUSharing interface {
	// Mode returns how the node shares a device instance (a
	// structs.Sharing* mode, "" when it does not know the instance) and
	// whether the instance is a simulated GPU.
	Mode(deviceID string) (mode string, simulated bool)
	// StartMPS makes sure gpu's MPS control daemon runs for holder and
	// returns its pipe directory.
	StartMPS(gpu, holder string) (pipeDir string, err error)
	// StopMPS drops holder's hold on gpu's daemon; the last stops it.
	StopMPS(gpu, holder string)
	// MPSPipeDir is gpu's daemon's pipe directory, whether or not it runs.
	MPSPipeDir(gpu string) string
}

// mpsDrivers are the drivers whose tasks share the host's filesystem and
// IPC namespace, and so reach an MPS daemon's pipe directory. A docker
// container would need the directory mounted and the host's IPC
// namespace, which the docker driver does not do yet.
var mpsDrivers = map[string]bool{"raw_exec": true, "exec": true}

// gpuShares is what the allocation's GPU shares add to its tasks: the
// environment and event of each task, and the MPS daemons it holds.
type gpuShares struct {
	env    map[string]map[string]string // by task
	events map[string][]string          // by task
	mps    []string                     // GPUs whose daemon the allocation holds
}

// startGPUShares works out, for every task of the allocation, how the
// node enforces the GPU shares it holds, and starts the MPS daemons they
// need:
//
//	mps            the GPU's MPS daemon (none for a simulated GPU, which
//	               says so); CUDA_MPS_PIPE_DIRECTORY, and the slice's
//	               limits as CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("0=<MB>M":
//	               the daemon sees only its GPU, so it is ordinal 0) and
//	               CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (compute)
//	time-slicing   nothing to run; the event says the share is accounted,
//	               not enforced
//	mig            nothing to run; the task sees only the MIG instance
//	exclusive      a slice here is refused: the node's mode changed since
//	               the allocation was placed
//
// A restored allocation re-acquires its daemons (adopting those still
// running) without new events or checks, and only logs what fails: its
// tasks already run. Otherwise, on an error, what was started is stopped
// again.
func (ar *AllocRunner) startGPUShares() (*gpuShares, error) {
	s := &gpuShares{env: map[string]map[string]string{}, events: map[string][]string{}}
	if ar.sharing == nil || ar.restored && ar.allDead() {
		return s, nil
	}
	ar.mu.Lock()
	alloc := ar.alloc
	ar.mu.Unlock()
	for _, tr := range ar.tasks {
		err := ar.taskShares(s, alloc, tr.task)
		if err != nil && ar.restored {
			// Its tasks run already: failing the setup would not stop them.
			ar.logger.Warn("GPU sharing after client restart", "task", tr.task.Name, "error", err)
			continue
		}
		if err != nil {
			ar.stopGPUShares(s)
			return nil, fmt.Errorf("GPU sharing: task %q: %w", tr.task.Name, err)
		}
	}
	return s, nil
}

// taskShares adds one task's shares to s.
func (ar *AllocRunner) taskShares(s *gpuShares, alloc *structs.Allocation, t *structs.Task) error {
	task := t.Name
	res := taskResources(alloc, task)
	if res == nil {
		return nil
	}
	env := map[string]string{}
	mpsGPU := ""
	for _, d := range res.Devices {
		if d.Type != "gpu" {
			continue
		}
		for _, id := range d.DeviceIDs {
			mode, simulated := ar.sharing.Mode(id)
			if d.Slice() && mode == structs.SharingMPS && !simulated && !mpsDrivers[t.Driver] {
				return fmt.Errorf("driver %q cannot reach GPU %s's MPS daemon (MPS slices run under raw_exec or exec); the share cannot be enforced", t.Driver, id)
			}
			event, err := ar.shareOne(s, env, d, id, mode, simulated, &mpsGPU)
			if err != nil {
				return err
			}
			if event != "" {
				s.events[task] = append(s.events[task], event)
			}
		}
	}
	if len(env) > 0 {
		s.env[task] = env
	}
	return nil
}

// shareOne handles one GPU instance of a task: it returns the event to
// record ("" for none), fills env, and starts the GPU's MPS daemon.
func (ar *AllocRunner) shareOne(s *gpuShares, env map[string]string, d *structs.AllocatedDeviceResource, id, mode string, simulated bool, mpsGPU *string) (string, error) {
	switch {
	case !d.Slice() && mode == structs.SharingMIG:
		return fmt.Sprintf("GPU share enforced by MIG: the task sees only MIG instance %s", id), nil
	case !d.Slice():
		return "", nil
	case mode == structs.SharingMPS:
		if *mpsGPU != "" && *mpsGPU != id {
			return "", fmt.Errorf("MPS slices of two GPUs (%s, %s): a task may hold an MPS slice of one GPU only, each GPU has its own MPS daemon", *mpsGPU, id)
		}
		*mpsGPU = id
		return ar.shareMPS(s, env, d, id, simulated)
	case mode == structs.SharingExclusive && !ar.restored:
		return "", fmt.Errorf("GPU %s is exclusive on this node and takes no slices (was its gpu_sharing mode changed?)", id)
	}
	return fmt.Sprintf("GPU share accounted, not enforced (time-slicing): %s of GPU %s", sliceWords(d), id), nil
}

// shareMPS sets the MPS environment of one slice and, on a real GPU,
// holds the GPU's daemon.
func (ar *AllocRunner) shareMPS(s *gpuShares, env map[string]string, d *structs.AllocatedDeviceResource, id string, simulated bool) (string, error) {
	pipe := ar.sharing.MPSPipeDir(id)
	if !simulated && !slices.Contains(s.mps, id) {
		var err error
		if pipe, err = ar.sharing.StartMPS(id, ar.id); err != nil {
			return "", err
		}
		s.mps = append(s.mps, id)
	}
	env[EnvMPSPipeDirectory] = pipe
	if d.MemoryMB > 0 {
		env[EnvMPSPinnedDeviceMemLimit] = "0=" + strconv.FormatUint(d.MemoryMB, 10) + "M"
	}
	if d.Compute > 0 {
		env[EnvMPSActiveThreadPercentage] = strconv.Itoa(d.Compute)
	}
	limits := sliceWords(d)
	if simulated {
		return fmt.Sprintf("GPU share on simulated GPU %s: MPS simulated, no MPS daemon started; limits set in the environment: %s", id, limits), nil
	}
	return fmt.Sprintf("GPU share enforced by MPS on GPU %s: %s", id, limits), nil
}

// sliceWords renders a slice: "20 GiB GPU memory, 25% compute".
func sliceWords(d *structs.AllocatedDeviceResource) string {
	var parts []string
	if d.MemoryMB > 0 {
		parts = append(parts, structs.FormatBytes(d.MemoryMB<<20)+" GPU memory")
	}
	if d.Compute > 0 {
		parts = append(parts, strconv.Itoa(d.Compute)+"% compute")
	}
	return strings.Join(parts, ", ")
}

// stopGPUShares releases the MPS daemons the allocation holds.
func (ar *AllocRunner) stopGPUShares(s *gpuShares) {
	if s == nil || ar.sharing == nil {
		return
	}
	for _, gpu := range s.mps {
		ar.sharing.StopMPS(gpu, ar.id)
	}
	s.mps = nil
}

// recordGPUShares adds each task's GPU Share events (a fresh allocation
// only: a restored one recorded them when it first ran).
func (ar *AllocRunner) recordGPUShares(s *gpuShares) {
	if ar.restored {
		return
	}
	now := ar.clock.Now().UnixNano()
	for _, task := range slices.Sorted(maps.Keys(s.events)) {
		ar.mutate(task, func(st *structs.TaskState) {
			for _, msg := range s.events[task] {
				appendEvent(st, &structs.TaskEvent{Type: TaskGPUShare, Time: now, Message: msg, DisplayMessage: msg})
			}
		})
	}
}

// gpuShareEnv returns the environment the task's GPU shares add.
func (ar *AllocRunner) gpuShareEnv(task string) map[string]string {
	if ar.shares == nil {
		return nil
	}
	return ar.shares.env[task]
}

// allDead reports whether every task is dead (a restored allocation that
// ended while the client was away).
func (ar *AllocRunner) allDead() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	for _, st := range ar.states {
		if st.State != structs.TaskStateDead {
			return false
		}
	}
	return true
}
