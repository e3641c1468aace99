package scheduler

import (
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// sysJob returns a system job "s" (version 10) with one group "g".
func sysJob(typ string) *structs.Job {
	job := &structs.Job{
		ID: "s", Type: typ, Datacenters: []string{"dc1"}, JobModifyIndex: 10,
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "x"}}},
		}},
	}
	job.Canonicalize()
	return job
}

// sysAlloc returns an allocation of job's group g on node, with its
// desired and client status, created at index created.
func sysAlloc(job *structs.Job, node, desired, client string, created uint64) *structs.Allocation {
	return &structs.Allocation{
		ID: node + "-" + client + "-" + string(rune('a'+created)), Name: "s.g[0]", JobID: job.ID, Job: job,
		TaskGroup: "g", NodeID: node, DesiredStatus: desired, ClientStatus: client, CreateIndex: created,
	}
}

func sysNode(id, status string, mutate ...func(*structs.Node)) *structs.Node {
	n := &structs.Node{ID: id, Status: status, SchedulingEligibility: structs.NodeSchedulingEligible}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func TestReconcileSystem(t *testing.T) {
	const run, stopped = structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop
	const running, complete, failed = structs.AllocClientStatusRunning, structs.AllocClientStatusComplete, structs.AllocClientStatusFailed
	system, sysbatch := sysJob(structs.JobTypeSystem), sysJob(structs.JobTypeSysBatch)
	older := system.Copy()
	older.JobModifyIndex = 5
	older.TaskGroups[0].Tasks[0].Config["command"] = "y"
	zero := system.Copy()
	zero.TaskGroups[0].Count = 0
	ready := []*structs.Node{sysNode("n1", structs.NodeStatusReady), sysNode("n2", structs.NodeStatusReady)}
	ineligible := []*structs.Node{
		sysNode("n1", structs.NodeStatusReady, func(n *structs.Node) { n.SchedulingEligibility = structs.NodeSchedulingIneligible }),
		sysNode("n2", structs.NodeStatusReady),
	}
	withJob := func(a *structs.Allocation, j *structs.Job) *structs.Allocation { a.Job = j; return a }
	withGroup := func(a *structs.Allocation, g string) *structs.Allocation { a.TaskGroup = g; return a }

	tests := []struct {
		name     string
		job      *structs.Job
		sysbatch bool
		allocs   []*structs.Allocation
		nodes    []*structs.Node
		stops    []string // "allocID:desc", ":lost" appended when stopped as lost
		place    []string // node IDs
		verify   []string // node IDs
	}{
		{name: "one placement per node", job: system, nodes: ready, place: []string{"n1", "n2"}},
		{
			name: "running alloc verified", job: system, nodes: ready,
			allocs: []*structs.Allocation{sysAlloc(system, "n1", run, running, 1)},
			place:  []string{"n2"}, verify: []string{"n1"},
		},
		{
			name: "duplicate on a node: newer stopped", job: system, nodes: ready[:1],
			allocs: []*structs.Allocation{sysAlloc(system, "n1", run, running, 2), sysAlloc(system, "n1", run, running, 1)},
			stops:  []string{"n1-running-c:" + DescScaledDown}, verify: []string{"n1"},
		},
		{
			name: "node gone from state: lost", job: system, nodes: ready[:1],
			allocs: []*structs.Allocation{sysAlloc(system, "n9", run, running, 1)},
			stops:  []string{"n9-running-b:" + DescNodeLost + ":lost"}, place: []string{"n1"},
		},
		{
			name: "node down: lost, placement refused later", job: system,
			nodes:  []*structs.Node{sysNode("n1", structs.NodeStatusDown)},
			allocs: []*structs.Allocation{sysAlloc(system, "n1", run, running, 1)},
			stops:  []string{"n1-running-b:" + DescNodeLost + ":lost"}, place: []string{"n1"},
		},
		{
			name: "group removed", job: system, nodes: ready[:1],
			allocs: []*structs.Allocation{withGroup(sysAlloc(system, "n1", run, running, 1), "old")},
			stops:  []string{"n1-running-b:" + DescGroupRemoved}, place: []string{"n1"},
		},
		{
			name: "count 0 stops the group", job: zero, nodes: ready,
			allocs: []*structs.Allocation{sysAlloc(system, "n1", run, running, 1)},
			stops:  []string{"n1-running-b:" + DescScaledDown},
		},
		{
			name: "group changed: replaced on the node", job: system, nodes: ready[:1],
			allocs: []*structs.Allocation{withJob(sysAlloc(system, "n1", run, running, 1), older)},
			stops:  []string{"n1-running-b:" + DescUpdated}, place: []string{"n1"},
		},
		{
			name: "ineligible node: left alone even when outdated", job: system, nodes: ineligible,
			allocs: []*structs.Allocation{withJob(sysAlloc(system, "n1", run, running, 1), older)},
			place:  []string{"n2"},
		},
		{name: "ineligible node without alloc: placement the filters refuse", job: system, nodes: ineligible, place: []string{"n1", "n2"}},
		{
			name: "system: completed placed again", job: system, nodes: ready[:1],
			allocs: []*structs.Allocation{sysAlloc(system, "n1", run, complete, 1)},
			place:  []string{"n1"},
		},
		{
			name: "sysbatch: completed is done", job: sysbatch, sysbatch: true, nodes: ready[:1],
			allocs: []*structs.Allocation{sysAlloc(sysbatch, "n1", run, complete, 1)},
		},
		{
			name: "sysbatch: completed by an older group spec runs again", job: sysbatch, sysbatch: true, nodes: ready[:1],
			allocs: []*structs.Allocation{withJob(sysAlloc(sysbatch, "n1", run, complete, 1), older)},
			place:  []string{"n1"},
		},
		{
			name: "sysbatch: failed placed again", job: sysbatch, sysbatch: true, nodes: ready[:1],
			allocs: []*structs.Allocation{sysAlloc(sysbatch, "n1", run, failed, 1)},
			place:  []string{"n1"},
		},
		{
			name: "job stopped", job: func() *structs.Job { j := system.Copy(); j.Stop = true; return j }(), nodes: ready,
			allocs: []*structs.Allocation{sysAlloc(system, "n1", run, running, 1), sysAlloc(system, "n2", stopped, complete, 1)},
			stops:  []string{"n1-running-b:" + DescJobStopped},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reconcileSystem(tt.job, tt.allocs, tt.nodes, tt.sysbatch, time.Time{})
			var stops, place, verify []string
			for _, s := range r.stops {
				desc := s.alloc.ID + ":" + s.desc
				if s.clientStatus == structs.AllocClientStatusLost {
					desc += ":lost"
				}
				stops = append(stops, desc)
			}
			for _, np := range r.place {
				place = append(place, np.node.ID)
			}
			for _, np := range r.verify {
				verify = append(verify, np.node.ID)
			}
			if !slices.Equal(stops, tt.stops) {
				t.Errorf("stops: got %v, want %v", stops, tt.stops)
			}
			if !slices.Equal(place, tt.place) {
				t.Errorf("place: got %v, want %v", place, tt.place)
			}
			if !slices.Equal(verify, tt.verify) {
				t.Errorf("verify: got %v, want %v", verify, tt.verify)
			}
		})
	}
}
