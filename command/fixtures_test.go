package command

import (
	"time"

	"github.com/droverhq/drover/structs"
)

// Fixed IDs and times for formatting tests and golden files.
var (
	testNow   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	minuteAgo = testNow.Add(-time.Minute).UnixNano()
	hourAgo   = testNow.Add(-time.Hour).UnixNano()
)

const (
	nodeID   = "5e6f7a8b-0000-4000-8000-000000000001"
	allocID1 = "1a2b3c4d-0000-4000-8000-000000000001"
	allocID2 = "9f8e7d6c-0000-4000-8000-000000000002"
	evalID1  = "e1e1e1e1-0000-4000-8000-000000000001"
	evalID2  = "b10cb10c-0000-4000-8000-000000000002"
	gpu0     = "GPU-00000000-1111-2222-3333-444444444444"
	gpu1     = "GPU-11111111-1111-2222-3333-444444444444"
	gpu2     = "GPU-22222222-1111-2222-3333-444444444444"
	gpu3     = "GPU-33333333-1111-2222-3333-444444444444"
)

func testJob() *structs.Job {
	return &structs.Job{
		ID: "train", Name: "train", Namespace: "default", Type: structs.JobTypeBatch, Priority: 50,
		Datacenters: []string{"dc1"}, Status: structs.JobStatusRunning, Version: 0, SubmitTime: hourAgo,
		TaskGroups: []*structs.TaskGroup{{Name: "train", Count: 2, Tasks: []*structs.Task{{Name: "main", Driver: "raw_exec"}}}},
	}
}

func gpuResources(task string, ids ...string) *structs.AllocatedResources {
	return &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{task: {
		Cpu:     structs.AllocatedCpuResources{CpuShares: 500},
		Memory:  structs.AllocatedMemoryResources{MemoryMB: 256},
		Devices: []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3", DeviceIDs: ids}},
	}}}
}

// testAllocs are a running allocation holding gpu0 and gpu1, and a
// complete one that held gpu2 (so gpu2 is free again).
func testAllocs() []*structs.Allocation {
	job := testJob()
	return []*structs.Allocation{
		{
			ID: allocID1, EvalID: evalID1, Name: "train.train[0]", Namespace: "default", NodeID: nodeID, NodeName: "gpu-node-1",
			JobID: "train", Job: job, TaskGroup: "train", AllocatedResources: gpuResources("main", gpu0, gpu1),
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
			CreateIndex: 20, ModifyIndex: 22, CreateTime: minuteAgo, ModifyTime: minuteAgo,
			TaskStates: map[string]*structs.TaskState{"main": {
				State: structs.TaskStateRunning, StartedAt: time.Unix(0, minuteAgo),
				Events: []*structs.TaskEvent{
					{Type: structs.TaskReceived, Time: minuteAgo, DisplayMessage: "Task received by client"},
					{Type: structs.TaskStarted, Time: minuteAgo + int64(time.Second), DisplayMessage: "Task started by client"},
				},
			}},
			Metrics: &structs.AllocMetric{
				NodesEvaluated: 2, NodesFiltered: 1, ConstraintFiltered: map[string]int{"missing drivers: raw_exec": 1},
				AllocationTime: 1500 * time.Microsecond,
				ScoreMetaData: []*structs.NodeScoreMeta{
					{NodeID: nodeID, Scores: map[string]float64{"binpack": 0.52, "gpu-topology": 1}, NormScore: 0.76},
				},
			},
		},
		{
			ID: allocID2, EvalID: evalID1, Name: "train.train[1]", Namespace: "default", NodeID: nodeID, NodeName: "gpu-node-1",
			JobID: "train", Job: job, TaskGroup: "train", AllocatedResources: gpuResources("main", gpu2),
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusComplete,
			CreateIndex: 18, ModifyIndex: 25, CreateTime: hourAgo, ModifyTime: minuteAgo,
			TaskStates: map[string]*structs.TaskState{"main": {
				State: structs.TaskStateDead, StartedAt: time.Unix(0, hourAgo), FinishedAt: time.Unix(0, minuteAgo),
				Events: []*structs.TaskEvent{{Type: structs.TaskTerminated, Time: minuteAgo, ExitCode: 0}},
			}},
		},
	}
}

// testNode has four H100s; gpu3 is unhealthy.
func testNode() *structs.Node {
	insts := make([]*structs.NodeDevice, 0, 4)
	for _, id := range []string{gpu3, gpu1, gpu0, gpu2} {
		insts = append(insts, &structs.NodeDevice{ID: id, Healthy: id != gpu3, HealthDescription: map[bool]string{true: "Xid 79: GPU has fallen off the bus"}[id == gpu3]})
	}
	return &structs.Node{
		ID: nodeID, Name: "gpu-node-1", Datacenter: "dc1", HTTPAddr: "10.0.0.5:4646",
		Attributes: map[string]string{"kernel.name": "linux", "cpu.numcores": "16", "unique.hostname": "gpu-node-1", "driver.raw_exec": "1"},
		Drivers:    map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}, "docker": {Detected: false}},
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: 32000, TotalCpuCores: 16},
			Memory: structs.NodeMemoryResources{MemoryMB: 65536},
			Devices: []*structs.NodeDeviceResource{{
				Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3", Instances: insts,
				Attributes: map[string]string{structs.DeviceAttrMemory: "80 GiB"},
			}},
		},
		Status: structs.NodeStatusReady, StatusUpdatedAt: minuteAgo, SchedulingEligibility: structs.NodeSchedulingEligible,
	}
}

// gpuFailure is a group that could not be placed: GPUs ran out on one
// node and a device constraint filtered another.
func gpuFailure() map[string]*structs.AllocMetric {
	return map[string]*structs.AllocMetric{"train": {
		NodesEvaluated: 2, NodesFiltered: 1, NodesExhausted: 1, CoalescedFailures: 1,
		ConstraintFiltered: map[string]int{"${device.attr.memory} >= 100 GiB": 1},
		DimensionExhausted: map[string]int{"devices: nvidia/gpu: 2 of 8 free, need 5": 1},
	}}
}
