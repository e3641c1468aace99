package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

func reconcileJob(typ string, count int) *structs.Job {
	job := &structs.Job{
		ID: "j", Type: typ, Datacenters: []string{"dc1"}, JobModifyIndex: 10,
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: count,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "x"}}},
		}},
	}
	job.Canonicalize()
	return job
}

// alloc returns an allocation of group g at idx on node n1, with its
// desired and client status given as "run/running" or "stop/running".
func alloc(job *structs.Job, idx int, status string) *structs.Allocation {
	desired, client, _ := strings.Cut(status, "/")
	return &structs.Allocation{
		ID: fmt.Sprintf("a%d-%s", idx, status), Name: structs.AllocName(job.ID, "g", idx),
		JobID: job.ID, Job: job, TaskGroup: "g", NodeID: "n1",
		DesiredStatus: desired, ClientStatus: client, CreateIndex: uint64(idx),
	}
}

func TestReconcile(t *testing.T) {
	up := map[string]*structs.Node{"n1": {ID: "n1", Status: structs.NodeStatusReady}}
	down := map[string]*structs.Node{"n1": {ID: "n1", Status: structs.NodeStatusDown}}
	service, batch := reconcileJob(structs.JobTypeService, 3), reconcileJob(structs.JobTypeBatch, 3)
	older := service.Copy()
	older.JobModifyIndex = 5
	older.TaskGroups[0].Tasks[0].Config["command"] = "y"
	olderSame := service.Copy()
	olderSame.JobModifyIndex = 5
	olderSame.TaskGroups[0].Count = 1
	withJob := func(a *structs.Allocation, j *structs.Job) *structs.Allocation { a.Job = j; return a }

	tests := []struct {
		name   string
		job    *structs.Job
		allocs []*structs.Allocation
		nodes  map[string]*structs.Node
		stops  []string // "name:desc[:client status]"
		place  []string
	}{
		{
			name:  "empty job places all",
			job:   service,
			nodes: up,
			place: []string{"j.g[0]", "j.g[1]", "j.g[2]"},
		},
		{
			name:   "running allocs kept, gap filled",
			job:    service,
			allocs: []*structs.Allocation{alloc(service, 0, "run/running"), alloc(service, 2, "run/pending")},
			nodes:  up,
			place:  []string{"j.g[1]"},
		},
		{
			name:   "scale down stops highest index first",
			job:    reconcileJob(structs.JobTypeService, 1),
			allocs: []*structs.Allocation{alloc(service, 0, "run/running"), alloc(service, 1, "run/running"), alloc(service, 2, "run/running")},
			nodes:  up,
			stops:  []string{"j.g[2]:" + DescScaledDown, "j.g[1]:" + DescScaledDown},
		},
		{
			name:   "duplicate name: newer one stopped",
			job:    service,
			allocs: []*structs.Allocation{alloc(service, 0, "run/running"), alloc(service, 1, "run/running"), alloc(service, 2, "run/running"), {ID: "dup", Name: "j.g[1]", JobID: "j", Job: service, TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", ClientStatus: "running", CreateIndex: 99}},
			nodes:  up,
			stops:  []string{"j.g[1]:" + DescScaledDown},
		},
		{
			name:   "failed and lost-by-client replaced, stopped ignored",
			job:    service,
			allocs: []*structs.Allocation{alloc(service, 0, "run/failed"), alloc(service, 1, "run/lost"), alloc(service, 2, "stop/running")},
			nodes:  up,
			place:  []string{"j.g[0]", "j.g[1]", "j.g[2]"},
		},
		{
			name:   "service complete replaced",
			job:    service,
			allocs: []*structs.Allocation{alloc(service, 0, "run/complete"), alloc(service, 1, "run/running"), alloc(service, 2, "run/running")},
			nodes:  up,
			place:  []string{"j.g[0]"},
		},
		{
			name:   "batch complete counts",
			job:    batch,
			allocs: []*structs.Allocation{alloc(batch, 0, "run/complete"), alloc(batch, 1, "run/failed"), alloc(batch, 2, "run/running")},
			nodes:  up,
			place:  []string{"j.g[1]"},
		},
		{
			name:   "node down: lost and replaced",
			job:    service,
			allocs: []*structs.Allocation{alloc(service, 0, "run/running"), alloc(service, 1, "run/running"), alloc(service, 2, "run/complete")},
			nodes:  down,
			stops:  []string{"j.g[0]:" + DescNodeLost + ":lost", "j.g[1]:" + DescNodeLost + ":lost"},
			place:  []string{"j.g[0]", "j.g[1]", "j.g[2]"},
		},
		{
			name:   "node missing: lost",
			job:    reconcileJob(structs.JobTypeService, 1),
			allocs: []*structs.Allocation{alloc(service, 0, "run/running")},
			nodes:  map[string]*structs.Node{},
			stops:  []string{"j.g[0]:" + DescNodeLost + ":lost"},
			place:  []string{"j.g[0]"},
		},
		{
			name:   "older version with changed group replaced",
			job:    service,
			allocs: []*structs.Allocation{withJob(alloc(service, 0, "run/running"), older), alloc(service, 1, "run/running"), alloc(service, 2, "run/running")},
			nodes:  up,
			stops:  []string{"j.g[0]:" + DescUpdated},
			place:  []string{"j.g[0]"},
		},
		{
			name:   "older version differing only in count kept",
			job:    service,
			allocs: []*structs.Allocation{withJob(alloc(service, 0, "run/running"), olderSame), alloc(service, 1, "run/running"), alloc(service, 2, "run/running")},
			nodes:  up,
		},
		{
			name:   "stopped job stops live allocs only",
			job:    func() *structs.Job { j := service.Copy(); j.Stop = true; return j }(),
			allocs: []*structs.Allocation{alloc(service, 0, "run/running"), alloc(service, 1, "run/complete")},
			nodes:  up,
			stops:  []string{"j.g[0]:" + DescJobStopped},
		},
		{
			name:   "stopped job on a down node: lost",
			job:    func() *structs.Job { j := service.Copy(); j.Stop = true; return j }(),
			allocs: []*structs.Allocation{alloc(service, 0, "run/running")},
			nodes:  down,
			stops:  []string{"j.g[0]:" + DescJobStopped + ":lost"},
		},
		{
			name:   "purged job stops live allocs",
			allocs: []*structs.Allocation{alloc(service, 0, "run/pending")},
			nodes:  up,
			stops:  []string{"j.g[0]:" + DescJobStopped},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batchJob := tt.job != nil && tt.job.Type == structs.JobTypeBatch
			r := reconcile(tt.job, tt.allocs, tt.nodes, batchJob, time.Time{})

			var stops, place []string
			for _, s := range r.stops {
				stop := s.alloc.Name + ":" + s.desc
				if s.clientStatus != "" {
					stop += ":" + s.clientStatus
				}
				stops = append(stops, stop)
			}
			for _, p := range r.place {
				place = append(place, p.name)
			}
			if !slices.Equal(stops, tt.stops) {
				t.Errorf("stops: got %v, want %v", stops, tt.stops)
			}
			if !slices.Equal(place, tt.place) {
				t.Errorf("place: got %v, want %v", place, tt.place)
			}
		})
	}
}

func TestGroupSpecEqual(t *testing.T) {
	base := reconcileJob(structs.JobTypeService, 1).TaskGroups[0]
	tests := []struct {
		name   string
		change func(*structs.TaskGroup)
		equal  bool
	}{
		{name: "same", change: func(*structs.TaskGroup) {}, equal: true},
		{name: "count", change: func(g *structs.TaskGroup) { g.Count = 7 }, equal: true},
		{name: "nil vs empty meta", change: func(g *structs.TaskGroup) { g.Meta = map[string]string{} }, equal: true},
		{name: "nil vs empty constraints", change: func(g *structs.TaskGroup) { g.Constraints = []*structs.Constraint{} }, equal: true},
		{name: "meta", change: func(g *structs.TaskGroup) { g.Meta = map[string]string{"a": "b"} }, equal: false},
		{name: "config", change: func(g *structs.TaskGroup) { g.Tasks[0].Config["command"] = "z" }, equal: false},
		{name: "memory", change: func(g *structs.TaskGroup) { g.Tasks[0].Resources.MemoryMB++ }, equal: false},
		{name: "env", change: func(g *structs.TaskGroup) { g.Tasks[0].Env = map[string]string{"A": "1"} }, equal: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := base.Copy()
			tt.change(changed)
			if got := groupSpecEqual(base, changed); got != tt.equal {
				t.Errorf("equal: got %v, want %v", got, tt.equal)
			}
		})
	}
}
