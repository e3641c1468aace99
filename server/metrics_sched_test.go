package server

import (
	"math"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestPendingReason(t *testing.T) {
	tests := []struct {
		name string
		m    *structs.AllocMetric
		want string
	}{
		{"nothing recorded", nil, PendingOther},
		{"no nodes", &structs.AllocMetric{}, PendingOther},
		{"gang first", &structs.AllocMetric{Gang: `group "w" would reach 2 of min 8`, QuotaExhausted: []string{"q"}}, PendingGang},
		{"quota before queue", &structs.AllocMetric{QuotaExhausted: []string{`quota "q" exhausted: gpu 2 of 2 used, need 1`}, Queue: "at max"}, PendingQuota},
		{"queue before capacity", &structs.AllocMetric{Queue: "queue research at its maximum", DimensionExhausted: map[string]int{"cpu": 3}}, PendingQueue},
		{"gpus exhausted", &structs.AllocMetric{DimensionExhausted: map[string]int{"devices: nvidia/gpu: 2 of 8 free, need 4": 5, "cpu": 1}}, PendingGPU},
		{"cpu exhausted most", &structs.AllocMetric{DimensionExhausted: map[string]int{"devices: nvidia/gpu: 2 of 8 free, need 4": 1, "cpu": 4}}, PendingCPU},
		{"memory exhausted", &structs.AllocMetric{DimensionExhausted: map[string]int{"memory": 2}}, PendingMemory},
		{"tie takes the first name", &structs.AllocMetric{DimensionExhausted: map[string]int{"memory": 2, "cpu": 2}}, PendingCPU},
		{"exhausted beats filtered", &structs.AllocMetric{DimensionExhausted: map[string]int{"memory": 1}, ConstraintFiltered: map[string]int{"constraint ${attr.kernel.name} = linux": 9}}, PendingMemory},
		{"no such device", &structs.AllocMetric{ConstraintFiltered: map[string]int{"device nvidia/gpu/B200 not available": 3}}, PendingGPU},
		{"constraint", &structs.AllocMetric{ConstraintFiltered: map[string]int{"constraint ${attr.kernel.name} = windows": 3}}, PendingConstraint},
		{"filtered without reason", &structs.AllocMetric{NodesFiltered: 2}, PendingConstraint},
		{"unknown dimension", &structs.AllocMetric{DimensionExhausted: map[string]int{"node has no resources": 1}}, PendingOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pendingReason(tt.m); got != tt.want {
				t.Errorf("pendingReason = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestClusterMetricsQueuesQuotasFragmentation writes a queue, a quota, a
// node, allocations and blocked evaluations straight into a leader's
// state and checks the queue, quota, fragmentation and pending series
// against them.
func TestClusterMetricsQueuesQuotasFragmentation(t *testing.T) {
	s := startServer(t, testConfig(t))
	st := s.State()
	index := uint64(1_000_000)
	write := func(fn func(uint64) error) {
		t.Helper()
		index++
		if err := fn(index); err != nil {
			t.Fatal(err)
		}
	}
	write(func(i uint64) error {
		return st.UpsertQuotaSpecs(i, []*structs.QuotaSpec{{Name: "gpu-q", Limits: []*structs.QuotaLimit{
			{Region: "global", RegionLimit: &structs.RegionLimit{GPUs: 4, CPU: 8000, MemoryMB: -1}},
			{Region: "elsewhere", RegionLimit: &structs.RegionLimit{GPUs: 99}},
		}}})
	})
	write(func(i uint64) error {
		return st.UpsertNamespaces(i, []*structs.Namespace{{Name: "team-a", Quota: "gpu-q"}})
	})
	write(func(i uint64) error {
		return st.UpsertQueue(i, &structs.Queue{Name: "research", Weight: 3, GuaranteedGPUs: 2, MaxGPUs: 6})
	})
	node := gpuNode("n1", 4)
	node.Status = structs.NodeStatusReady
	// n2 has a second model; n3 is down and counts in no fragmentation.
	mixed, down := gpuNode("n2", 1), gpuNode("n3", 8)
	mixed.Status, down.Status = structs.NodeStatusReady, structs.NodeStatusDown
	a100 := *gpuNode("n2-a100", 2).NodeResources.Devices[0]
	a100.Name = "NVIDIA A100-SXM4-80GB"
	mixed.NodeResources.Devices = append(mixed.NodeResources.Devices, &a100)
	for _, n := range []*structs.Node{node, mixed, down} {
		write(func(i uint64) error { return st.UpsertNode(i, n) })
	}
	train := gpuJob("train", structs.JobTypeService, 2, 1)
	train.Namespace, train.Queue = "team-a", "research"
	waiting := gpuJob("waiting", structs.JobTypeService, 3, 8)
	for _, j := range []*structs.Job{train, waiting} {
		write(func(i uint64) error { return st.UpsertJob(i, j) })
	}
	gpu := func(k int) string { return node.NodeResources.Devices[0].Instances[k].ID }
	alloc := func(job *structs.Job, dev *structs.AllocatedDeviceResource) *structs.Allocation {
		dev.Vendor, dev.Type = "nvidia", "gpu"
		nodeID := node.ID
		if dev.Name == "" {
			dev.Name = "NVIDIA H100 80GB HBM3"
		} else {
			nodeID = mixed.ID
		}
		return &structs.Allocation{
			ID: structs.GenerateUUID(), Namespace: job.Namespace, NodeID: nodeID, JobID: job.ID, Job: job, TaskGroup: "train",
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
			AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{"t": {
				Cpu:     structs.AllocatedCpuResources{CpuShares: 1000},
				Memory:  structs.AllocatedMemoryResources{MemoryMB: 1024},
				Devices: []*structs.AllocatedDeviceResource{dev},
			}}},
		}
	}
	// On n1, GPUs 0 and 1 whole (team-a, queue research), half of GPU 2
	// (default); on n2, half of its first A100 (default).
	write(func(i uint64) error {
		return st.UpsertAllocs(i, []*structs.Allocation{
			alloc(waiting, &structs.AllocatedDeviceResource{Name: a100.Name, DeviceIDs: []string{a100.Instances[0].ID}, Compute: 50, MemoryMB: 1024}),
			alloc(train, &structs.AllocatedDeviceResource{DeviceIDs: []string{gpu(0)}}),
			alloc(train, &structs.AllocatedDeviceResource{DeviceIDs: []string{gpu(1)}}),
			alloc(waiting, &structs.AllocatedDeviceResource{DeviceIDs: []string{gpu(2)}, Compute: 50, MemoryMB: 1024}),
		})
	})
	blocked := func(tg string, n int, m *structs.AllocMetric) *structs.Evaluation {
		return &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: structs.DefaultNamespace, JobID: waiting.ID, Type: waiting.Type,
			Status: structs.EvalStatusBlocked, QueuedAllocations: map[string]int{tg: n}, FailedTGAllocs: map[string]*structs.AllocMetric{tg: m}}
	}
	write(func(i uint64) error {
		return st.UpsertEvals(i, []*structs.Evaluation{
			blocked("train", 2, &structs.AllocMetric{DimensionExhausted: map[string]int{"devices: nvidia/gpu: 1 of 4 free, need 8": 1}}),
			blocked("train", 1, &structs.AllocMetric{QuotaExhausted: []string{`quota "gpu-q" exhausted`}}),
			{ID: structs.GenerateUUID(), Namespace: structs.DefaultNamespace, JobID: waiting.ID, Status: structs.EvalStatusComplete, QueuedAllocations: map[string]int{"train": 5}},
		})
	})
	nsUsed, err := st.NamespaceUsage(nil, "team-a")
	if err != nil {
		t.Fatal(err)
	}

	got := gatherGauges(t, s.MetricsCollector())
	const model = "{model=NVIDIA H100 80GB HBM3}"
	// Live workload: two asks of 1 whole GPU, two of half a GPU. A whole
	// GPU ask cannot use a GPU half free; a half fits there, leaving
	// nothing it cannot use. n1 (free 0, 0, 50, 100): (1/2*50 + 1/2*0) /
	// 100 = 0.25 GPUs. n2's H100 (100): 0; its A100s (50, 100): 0.25, and
	// the node as a whole the same. 7 healthy GPUs on ready nodes.
	const h100Frag, a100Frag = 0.25, 0.25
	want := map[string]float64{
		"drover_queue_weight{queue=research}":                                     3,
		"drover_queue_guaranteed_gpus{queue=research}":                            2,
		"drover_queue_max_gpus{queue=research}":                                   6,
		"drover_queue_gpus_used{queue=research}":                                  2,
		"drover_queue_jobs_waiting{queue=research}":                               0,
		"drover_queue_weight{queue=default}":                                      1,
		"drover_queue_gpus_used{queue=default}":                                   1,
		"drover_queue_jobs_waiting{queue=default}":                                1,
		"drover_quota_used{quota=gpu-q,resource=gpus}":                            2,
		"drover_quota_used{quota=gpu-q,resource=cpu}":                             2000,
		"drover_quota_used{quota=gpu-q,resource=memory_mb}":                       2048,
		"drover_quota_used{quota=gpu-q,resource=gpu_memory_mb}":                   float64(nsUsed.GPUMemoryMB),
		"drover_quota_limit{quota=gpu-q,resource=gpus}":                           4,
		"drover_quota_limit{quota=gpu-q,resource=cpu}":                            8000,
		"drover_quota_limit{quota=gpu-q,resource=memory_mb}":                      0,
		"drover_quota_namespace_used{namespace=team-a,quota=gpu-q,resource=gpus}": 2,
		"drover_quota_namespace_used{namespace=team-a,quota=gpu-q,resource=cpu}":  2000,
		"drover_gpu_fragmentation" + model:                                        h100Frag,
		"drover_gpu_fragmentation{model=" + a100.Name + "}":                       a100Frag,
		"drover_gpu_fragmentation_ratio{}":                                        (h100Frag + a100Frag) / 7,
		"drover_allocations_pending{reason=gpu}":                                  2,
		"drover_allocations_pending{reason=quota}":                                1,
		"drover_allocations_pending{reason=cpu}":                                  0,
	}
	if nsUsed.GPUMemoryMB <= 0 {
		t.Fatalf("team-a's GPU memory used = %d, want above 0", nsUsed.GPUMemoryMB)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	absent := []string{
		"drover_quota_limit{quota=gpu-q,resource=gpu_memory_mb}", // unlimited
		"drover_allocations_pending{}",
	}
	for _, k := range absent {
		if g, ok := got[k]; ok {
			t.Errorf("%s = %v, want no such series", k, g)
		}
	}
	for _, q := range []string{"research", structs.DefaultQueue} {
		qs, err := st.QueueStatus(nil, q)
		if err != nil {
			t.Fatal(err)
		}
		k := "drover_queue_fair_share_gpus{queue=" + q + "}"
		if g := got[k]; g != qs.FairShare || g <= 0 {
			t.Errorf("%s = %v, want the state's %v (above 0: both queues are active)", k, g, qs.FairShare)
		}
	}
}
