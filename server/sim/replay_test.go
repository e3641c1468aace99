package sim

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// tickClock returns a clock that moves one millisecond each time it is
// read, so every Process call takes exactly 1 ms.
func tickClock() func() time.Time {
	now := Epoch
	return func() time.Time {
		now = now.Add(time.Millisecond)
		return now
	}
}

func gpuPods(n, milli int) []PodSpec {
	pods := make([]PodSpec, n)
	for i := range pods {
		pods[i] = PodSpec{Name: "pod", CPUMilli: 1000, MemoryMiB: 1024, NumGPU: 1, GPUMilli: milli}
	}
	return pods
}

func gpuNodes(n, gpus int) []NodeSpec {
	nodes := SyntheticNodes(n, gpus)
	return nodes
}

func TestRunFillsSmallCluster(t *testing.T) {
	// 2 nodes × 2 GPUs and 5 single-GPU pods: 4 fit, the fifth fails.
	res, outcomes, err := Run(context.Background(), Config{Nodes: gpuNodes(2, 2), Pods: gpuPods(5, 1000), Clock: tickClock()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Submitted != 5 || res.Placed != 4 || res.Failed != 1 {
		t.Errorf("got submitted %d, placed %d, failed %d; want 5, 4, 1", res.Submitted, res.Placed, res.Failed)
	}
	if res.GPUAllocationRatio != 1 || res.GPURequested != 5 || res.ClusterGPUs != 4 {
		t.Errorf("got ratio %v of %d GPUs (%v requested), want 1 of 4 (5 requested)", res.GPUAllocationRatio, res.ClusterGPUs, res.GPURequested)
	}
	if want := 4000.0 / (2 * SyntheticCPUMilli); res.CPUAllocationRatio != want {
		t.Errorf("got cpu ratio %v, want %v", res.CPUAllocationRatio, want)
	}
	// Every GPU is taken: nothing free, nothing fragmented.
	if res.Fragmentation != 0 {
		t.Errorf("got fragmentation %v, want 0 on a full cluster", res.Fragmentation)
	}
	// Each Process read the clock twice: 1 ms each.
	if res.P50Ms != 1 || res.P99Ms != 1 || res.ProcessSeconds != 0.005 || res.PlacementsPerSecond != 800 {
		t.Errorf("got p50 %v ms, p99 %v ms, process %v s, %v placements/s; want 1, 1, 0.005, 800",
			res.P50Ms, res.P99Ms, res.ProcessSeconds, res.PlacementsPerSecond)
	}
	if res.PlanRejections != 0 {
		t.Errorf("got %d plan rejections, want 0", res.PlanRejections)
	}
	perNode := map[string]int{}
	for i, o := range outcomes {
		if o.JobID == "" || (i < 4) != o.Placed {
			t.Errorf("pod %d: got job %q placed %t, want placed %t", i, o.JobID, o.Placed, i < 4)
		}
		if o.Placed {
			perNode[o.NodeID]++
		}
	}
	if len(perNode) != 2 || perNode[NodeID("sim-node-00000")] != 2 || perNode[NodeID("sim-node-00001")] != 2 {
		t.Errorf("got placements per node %v, want 2 on each node", perNode)
	}
}

func TestRunHonoursGPUSpec(t *testing.T) {
	nodes := []NodeSpec{
		{Name: "t4", CPUMilli: 32000, MemoryMiB: 65536, GPUs: 2, Model: "T4"},
		{Name: "v100", CPUMilli: 32000, MemoryMiB: 65536, GPUs: 2, Model: "V100M32"},
		{Name: "cpu", CPUMilli: 32000, MemoryMiB: 65536},
	}
	pods := []PodSpec{
		{Name: "wants-v100", CPUMilli: 1000, MemoryMiB: 1024, NumGPU: 1, GPUMilli: 1000, GPUSpec: []string{"V100M16", "V100M32"}},
		{Name: "wants-v100", CPUMilli: 1000, MemoryMiB: 1024, NumGPU: 1, GPUMilli: 1000, GPUSpec: []string{"V100M16", "V100M32"}},
		{Name: "wants-v100", CPUMilli: 1000, MemoryMiB: 1024, NumGPU: 1, GPUMilli: 1000, GPUSpec: []string{"V100M16", "V100M32"}},
		{Name: "wants-t4", CPUMilli: 1000, MemoryMiB: 1024, NumGPU: 2, GPUMilli: 1000, GPUSpec: []string{"T4"}},
	}
	res, outcomes, err := Run(context.Background(), Config{Nodes: nodes, Pods: pods, Clock: tickClock()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	wantNode := []string{NodeID("v100"), NodeID("v100"), "", NodeID("t4")}
	for i, o := range outcomes {
		if o.NodeID != wantNode[i] {
			t.Errorf("pod %d (%s): got node %q, want %q", i, o.Pod.Name, o.NodeID, wantNode[i])
		}
	}
	if res.Placed != 3 || res.Failed != 1 || res.GPUAllocationRatio != 1 {
		t.Errorf("got placed %d, failed %d, ratio %v; want 3, 1, 1", res.Placed, res.Failed, res.GPUAllocationRatio)
	}
}

func TestRunFragmentation(t *testing.T) {
	// One node of 2 GPUs, one whole-GPU pod and one CPU-only pod: the
	// workload (GPU asks only) is all single whole GPUs, and the free GPU
	// is usable, so nothing is fragmented. With a pod asking 2 GPUs
	// added to the workload but not placeable, the free GPU is a fragment
	// for half the workload: 0.5 GPU of 2.
	nodes := []NodeSpec{{Name: "n", CPUMilli: 64000, MemoryMiB: 65536, GPUs: 2, Model: "A10"}}
	one := PodSpec{Name: "one", CPUMilli: 1000, MemoryMiB: 1024, NumGPU: 1, GPUMilli: 1000}
	cpu := PodSpec{Name: "cpu", CPUMilli: 1000, MemoryMiB: 1024}
	two := PodSpec{Name: "two", CPUMilli: 1000, MemoryMiB: 1024, NumGPU: 2, GPUMilli: 1000}
	tests := []struct {
		name       string
		pods       []PodSpec
		wantPlaced int
		want       float64
	}{
		{"free GPU usable", []PodSpec{one, cpu}, 2, 0},
		{"free GPU too small for half the asks", []PodSpec{one, cpu, two}, 2, 0.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _, err := Run(context.Background(), Config{Nodes: nodes, Pods: tt.pods, Clock: tickClock()})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if res.Placed != tt.wantPlaced || math.Abs(res.Fragmentation-tt.want) > 1e-9 {
				t.Errorf("got placed %d, fragmentation %v; want %d, %v", res.Placed, res.Fragmentation, tt.wantPlaced, tt.want)
			}
		})
	}
}

func TestRunFractional(t *testing.T) {
	// One node with one GPU: four 25% slices fit, a fifth does not.
	nodes := []NodeSpec{{Name: "n", CPUMilli: 64000, MemoryMiB: 65536, GPUs: 1, Model: "T4"}}
	res, outcomes, err := Run(context.Background(), Config{Nodes: nodes, Pods: gpuPods(5, 250), Clock: tickClock()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Placed != 4 || res.Failed != 1 || res.GPUAllocationRatio != 1 {
		t.Errorf("got placed %d, failed %d, ratio %v; want 4, 1, 1", res.Placed, res.Failed, res.GPUAllocationRatio)
	}
	if outcomes[4].Placed {
		t.Errorf("fifth 25%% slice placed, want it to fail")
	}
	if res.MaxGPUCompute != 100 || res.OvercommittedNodes != 0 {
		t.Errorf("got max GPU compute %d%%, %d overcommitted nodes; want exactly 100%% and none", res.MaxGPUCompute, res.OvercommittedNodes)
	}
}

func TestRunArrivalAndPolicy(t *testing.T) {
	cfg := Config{Nodes: gpuNodes(2, 4), Pods: gpuPods(3, 1000), Arrival: 1.5, Seed: 3, Clock: tickClock()}
	res, _, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	// 8 GPUs × 1.5 = 12 one-GPU pods; 8 fit.
	if res.Submitted != 12 || res.Placed != 8 || res.Failed != 4 || res.Policy != PolicyDefault || res.Seed != 3 {
		t.Errorf("got %+v, want 12 submitted, 8 placed, 4 failed, policy default, seed 3", res)
	}
	cfg.Policy = "random"
	if _, _, err := Run(context.Background(), cfg); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("policy random: got error %v, want ErrUnknownPolicy", err)
	}
	cfg.Policy, cfg.Nodes = structs.SchedulerAlgorithmFGD, nil
	if _, _, err := Run(context.Background(), cfg); err == nil {
		t.Errorf("no nodes: got no error, want one")
	}
}

func TestRunPolicyRanks(t *testing.T) {
	// Two single-GPU pods on 2 nodes × 2 GPUs: binpack puts both on one
	// node, spread one on each.
	tests := []struct {
		policy        string
		wantAlgorithm string
		wantNodes     int
	}{
		{PolicyDefault, structs.DefaultSchedulerAlgorithm, 1},
		{structs.SchedulerAlgorithmBinpack, structs.SchedulerAlgorithmBinpack, 1},
		{structs.SchedulerAlgorithmSpread, structs.SchedulerAlgorithmSpread, 2},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			res, outcomes, err := Run(context.Background(), Config{Nodes: gpuNodes(2, 2), Pods: gpuPods(2, 1000), Policy: tt.policy})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			used := map[string]bool{}
			for _, o := range outcomes {
				used[o.NodeID] = true
			}
			if res.Policy != tt.policy || res.Algorithm != tt.wantAlgorithm || len(used) != tt.wantNodes {
				t.Errorf("got policy %q, algorithm %q, %d nodes used; want %q, %q, %d",
					res.Policy, res.Algorithm, len(used), tt.policy, tt.wantAlgorithm, tt.wantNodes)
			}
		})
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Run(ctx, Config{Nodes: gpuNodes(1, 1), Pods: gpuPods(1, 1000)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got error %v, want context.Canceled", err)
	}
}

func TestRunWritesState(t *testing.T) {
	cfg := Config{Nodes: gpuNodes(1, 1), Pods: gpuPods(2, 1000), Clock: tickClock()}
	r, err := newReplay(cfg, cfg.Clock)
	if err != nil {
		t.Fatalf("new replay: %v", err)
	}
	for seq, p := range cfg.Pods {
		if _, err := r.submit(p, seq); err != nil {
			t.Fatalf("submit %d: %v", seq, err)
		}
	}
	snap, err := r.store.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	allocs, err := snap.AllocsByJob(nil, structs.DefaultNamespace, "pod-0")
	if err != nil || len(allocs) != 1 || len(allocs[0].DeviceIDs()) != 1 {
		t.Fatalf("pod-0: got %d allocs (err %v), want 1 holding one GPU", len(allocs), err)
	}
	evals, err := snap.EvalsByJob(nil, structs.DefaultNamespace, "pod-1")
	if err != nil {
		t.Fatalf("read evals: %v", err)
	}
	var blocked int
	for _, e := range evals {
		if e.Status == structs.EvalStatusBlocked {
			blocked++
		}
	}
	if blocked != 1 {
		t.Errorf("pod-1: got %d blocked evals of %d, want 1", blocked, len(evals))
	}
	if idx, _ := snap.LatestIndex(); idx != r.planner.index {
		t.Errorf("got latest index %d, want the planner's %d", idx, r.planner.index)
	}
}

func TestRunBatchJobs(t *testing.T) {
	// 3 nodes × 4 GPUs; 14 pods in batch jobs of 5: two shapes, so the
	// first batch has two groups. 12 fit, 2 fail, and the batch that
	// overflows places what fits.
	pods := gpuPods(14, 1000)
	for i := 0; i < 14; i += 2 {
		pods[i].CPUMilli = 2000
	}
	res, outcomes, err := Run(context.Background(), Config{Nodes: gpuNodes(3, 4), Pods: pods, JobSize: 5, Clock: tickClock()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Submitted != 14 || res.Placed != 12 || res.Failed != 2 || res.GPUAllocationRatio != 1 {
		t.Errorf("got submitted %d, placed %d, failed %d, ratio %v; want 14, 12, 2, 1", res.Submitted, res.Placed, res.Failed, res.GPUAllocationRatio)
	}
	jobs := map[string]int{}
	perNode := map[string]int{}
	for _, o := range outcomes {
		jobs[o.JobID]++
		if o.Placed == o.Failed {
			t.Errorf("pod of %s: placed %t, failed %t; want exactly one", o.JobID, o.Placed, o.Failed)
		}
		if o.Placed {
			perNode[o.NodeID]++
		}
	}
	if len(jobs) != 3 || jobs["batch-0"] != 5 || jobs["batch-2"] != 4 {
		t.Errorf("got pods per job %v, want batch-0..2 with 5, 5, 4", jobs)
	}
	for node, n := range perNode {
		if n > 4 {
			t.Errorf("node %s got %d single-GPU pods, has 4 GPUs", node, n)
		}
	}
	// Three evaluations of 1 ms each, shared by their pods.
	if res.ProcessSeconds != 0.003 {
		t.Errorf("got process %v s, want 0.003 (three evaluations)", res.ProcessSeconds)
	}
}
