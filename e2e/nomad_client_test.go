package e2e

import (
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// TestE2E_NomadClient drives Drover with the official Nomad Go client.
func TestE2E_NomadClient(t *testing.T) {
	dir := reachableDir(t)
	ports := freePorts(t, 3)
	a := startAgent(t, ports[0], "-config", agentConfig(t, dir, "node-nomad", ports, 2))

	c, err := nomad.NewClient(&nomad.Config{Address: a.addr})
	if err != nil {
		t.Fatal(err)
	}
	job := nomad.NewBatchJob("from-nomad", "from-nomad", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := nomad.NewTask("hello", "raw_exec").
		SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", "echo hello from $DROVER_TASK_NAME on $NVIDIA_VISIBLE_DEVICES"}).
		Require(&nomad.Resources{CPU: intp(100), MemoryMB: intp(64), Devices: []*nomad.RequestedDevice{{Name: "nvidia/gpu", Count: uint64p(1)}}})
	job.AddTaskGroup(nomad.NewTaskGroup("g", 1).AddTask(task))

	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if resp.EvalID == "" {
		t.Fatalf("register: empty EvalID in %+v", resp)
	}

	stubs, _, err := c.Jobs().List(nil)
	if err != nil {
		t.Fatalf("list jobs: %v", err)
	}
	if len(stubs) != 1 || stubs[0].ID != "from-nomad" || stubs[0].Type != "batch" {
		t.Fatalf("list jobs: got %+v, want the one batch job", stubs)
	}

	var allocs []*nomad.AllocationListStub
	waitFor(t, 30*time.Second, "the job's allocation to complete", func() bool {
		allocs, _, err = c.Jobs().Allocations("from-nomad", false, nil)
		if err != nil {
			t.Fatalf("job allocations: %v", err)
		}
		return len(allocs) == 1 && allocs[0].ClientStatus == "complete"
	})
	if ts := allocs[0].TaskStates["hello"]; ts == nil || ts.State != "dead" || ts.Failed {
		t.Errorf("task state: got %+v, want dead and not failed", ts)
	}

	nodes, _, err := c.Nodes().List(nil)
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	if len(nodes) != 1 || nodes[0].Name != "node-nomad" || nodes[0].Status != "ready" {
		t.Fatalf("list nodes: got %+v, want node-nomad ready", nodes)
	}
	if allocs[0].NodeID != nodes[0].ID {
		t.Errorf("allocation on node %s, want %s", allocs[0].NodeID, nodes[0].ID)
	}
}

func intp(i int) *int          { return &i }
func uint64p(i uint64) *uint64 { return &i }
