package state

import (
	"testing"

	"github.com/droverhq/drover/structs"
)

func newTestStore(t *testing.T) *StateStore {
	t.Helper()
	s, err := NewStateStore()
	if err != nil {
		t.Fatalf("NewStateStore: %v", err)
	}
	return s
}

func testNode(id string) *structs.Node {
	return &structs.Node{
		ID: id, Name: "node-" + id, Datacenter: "dc1", Status: structs.NodeStatusReady,
		Attributes: map[string]string{"kernel.name": "linux"},
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: 4000},
			Memory: structs.NodeMemoryResources{MemoryMB: 8192},
		},
	}
}

func testJob(id, typ string) *structs.Job {
	j := &structs.Job{
		ID: id, Type: typ, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"}}},
		}},
	}
	j.Canonicalize()
	return j
}

func testEval(id string, job *structs.Job, status string) *structs.Evaluation {
	return &structs.Evaluation{
		ID: id, Namespace: job.Namespace, JobID: job.ID, Type: job.Type,
		Priority: job.Priority, Status: status, TriggeredBy: structs.EvalTriggerJobRegister,
	}
}

func testAlloc(id string, job *structs.Job, nodeID, evalID string) *structs.Allocation {
	return &structs.Allocation{
		ID: id, Namespace: job.Namespace, JobID: job.ID, Job: job, TaskGroup: "web",
		Name: structs.AllocName(job.ID, "web", 0), NodeID: nodeID, EvalID: evalID,
		DesiredStatus: structs.AllocDesiredStatusRun,
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ids[T interface {
	*structs.Node | *structs.Job | *structs.Evaluation | *structs.Allocation
}](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		switch v := any(o).(type) {
		case *structs.Node:
			out = append(out, v.ID)
		case *structs.Job:
			out = append(out, v.Namespace+"/"+v.ID)
		case *structs.Evaluation:
			out = append(out, v.ID)
		case *structs.Allocation:
			out = append(out, v.ID)
		}
	}
	return out
}
