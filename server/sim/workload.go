package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/droverhq/drover/structs"
)

// TaskName names the one group and the one task of every simulated job.
const TaskName = "pod"

// Job returns the batch job for the seq-th submission of pod: ID
// "<pod name>-<seq>", one group of count 1, one raw_exec task asking for
// the pod's CPU (millicores, taken as MHz) and memory (MiB), and
// NumGPU "nvidia/gpu" devices. A fractional pod asks for Compute =
// GPUMilli/10 percent of one GPU; a GPU spec becomes the device
// constraint `${device.model} set_contains_any "<m1>,<m2>"`.
func Job(pod PodSpec, seq int) *structs.Job {
	res := &structs.Resources{CPU: int(pod.CPUMilli), MemoryMB: int(pod.MemoryMiB)}
	if pod.NumGPU > 0 {
		dev := &structs.RequestedDevice{Name: "nvidia/gpu", Count: uint64(pod.NumGPU)}
		if pod.Fractional() {
			dev.Compute = pod.ComputePercent()
		}
		if len(pod.GPUSpec) > 0 {
			dev.Constraints = []*structs.Constraint{{
				LTarget: "${device.model}",
				Operand: structs.ConstraintSetContainsAny,
				RTarget: strings.Join(pod.GPUSpec, ","),
			}}
		}
		res.Devices = []*structs.RequestedDevice{dev}
	}
	job := &structs.Job{
		ID:          fmt.Sprintf("%s-%d", pod.Name, seq),
		Type:        structs.JobTypeBatch,
		Datacenters: []string{Datacenter},
		TaskGroups: []*structs.TaskGroup{{
			Name:  TaskName,
			Count: 1,
			Tasks: []*structs.Task{{
				Name:      TaskName,
				Driver:    "raw_exec",
				Config:    map[string]any{"command": "/bin/true"},
				Resources: res,
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// BatchJob returns one batch job for consecutive submissions, the seq-th
// batch: pods of the same shape (resources and GPU spec) share a task
// group, in order of first appearance, named "pod-<n>" with a count of
// how many there are. It returns, per pod, the index of its group.
func BatchJob(pods []PodSpec, seq int) (*structs.Job, []int) {
	job := &structs.Job{ID: fmt.Sprintf("batch-%d", seq), Type: structs.JobTypeBatch, Datacenters: []string{Datacenter}}
	groupOf := make([]int, len(pods))
	byShape := map[string]int{}
	for i, pod := range pods {
		shape := fmt.Sprintf("%d/%d/%d/%d/%s", pod.CPUMilli, pod.MemoryMiB, pod.NumGPU, pod.GPUMilli, strings.Join(pod.GPUSpec, ","))
		g, ok := byShape[shape]
		if !ok {
			g = len(job.TaskGroups)
			byShape[shape] = g
			tg := Job(pod, seq).TaskGroups[0]
			tg.Name = fmt.Sprintf("%s-%d", TaskName, g)
			tg.Count = 0
			job.TaskGroups = append(job.TaskGroups, tg)
		}
		job.TaskGroups[g].Count++
		groupOf[i] = g
	}
	job.Canonicalize()
	return job, groupOf
}

// Arrivals returns the order in which pods are submitted.
//
// With inflation <= 0 every pod is submitted once, in file order. Else the
// pods are shuffled with a PCG source seeded by (seed, seed) and taken in
// that order, reshuffled each time the list runs out, for as long as the
// GPUs requested so far (the sum of GPUShare) are below inflation ×
// clusterGPUs: the paper's "arrived GPU demand" without departures. A
// workload without GPU demand stops after one pass.
//
// limit > 0 caps the number of submissions.
func Arrivals(pods []PodSpec, clusterGPUs int, inflation float64, seed uint64, limit int) []PodSpec {
	capped := func(out []PodSpec) []PodSpec {
		if limit > 0 && len(out) > limit {
			return out[:limit]
		}
		return out
	}
	if inflation <= 0 || len(pods) == 0 {
		return capped(append([]PodSpec(nil), pods...))
	}
	target := inflation * float64(clusterGPUs)
	rng := rand.New(rand.NewPCG(seed, seed))
	order := append([]PodSpec(nil), pods...)
	var out []PodSpec
	demand := 0.0
	for demand < target && (limit <= 0 || len(out) < limit) {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		pass := 0.0
		for _, p := range order {
			if demand >= target || (limit > 0 && len(out) >= limit) {
				break
			}
			out = append(out, p)
			demand += p.GPUShare()
			pass += p.GPUShare()
		}
		if pass == 0 {
			break
		}
	}
	return out
}
