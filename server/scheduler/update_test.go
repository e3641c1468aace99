package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

// updateFixture is version 5 of a service job (count 4) and the version
// 10 that a test's change makes of it.
type updateFixture struct {
	old, cur *structs.Job
}

func newUpdateFixture(count, maxParallel int, change func(*structs.Job)) updateFixture {
	old := reconcileJob(structs.JobTypeService, count)
	old.JobModifyIndex = 5
	cur := old.Copy()
	cur.JobModifyIndex = 10
	change(cur)
	for _, tg := range cur.TaskGroups {
		if tg.Update != nil {
			tg.Update.MaxParallel = maxParallel
		}
	}
	return updateFixture{old: old, cur: cur}
}

func envChange(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "2"} }

// on returns alloc(job, idx, status) modified at index modify (the plan
// that last wrote it).
func on(job *structs.Job, idx int, status string, modify uint64) *structs.Allocation {
	a := alloc(job, idx, status)
	a.ID = fmt.Sprintf("%s-v%d", a.ID, job.JobModifyIndex)
	a.AllocModifyIndex = modify
	return a
}

// updatedFor returns an allocation of old stopped for the update at
// index 11.
func updatedFor(old *structs.Job, idx int) *structs.Allocation {
	a := on(old, idx, "stop/complete", 11)
	a.DesiredDescription = DescUpdated
	return a
}

func TestReconcileUpdates(t *testing.T) {
	up := map[string]*structs.Node{"n1": {ID: "n1", Status: structs.NodeStatusReady}}
	env1 := newUpdateFixture(4, 1, envChange)
	env2 := newUpdateFixture(4, 2, envChange)
	unlimited := newUpdateFixture(4, 0, envChange)
	countOnly := newUpdateFixture(4, 1, func(j *structs.Job) { j.TaskGroups[0].Count = 5 })
	strategyOnly := newUpdateFixture(2, 3, func(*structs.Job) {})
	scaleAndEnv := newUpdateFixture(2, 1, func(j *structs.Job) { envChange(j); j.TaskGroups[0].Count = 4 })
	batchOld, batchCur := reconcileJob(structs.JobTypeBatch, 3), reconcileJob(structs.JobTypeBatch, 3)
	batchOld.JobModifyIndex = 5
	batchCur.TaskGroups[0].Update = structs.DefaultUpdateStrategy()
	envChange(batchCur)
	mid := env1.cur.Copy()
	mid.JobModifyIndex = 7
	laterCount := env1.cur.Copy()
	laterCount.TaskGroups[0].Count = 5
	olds := func(f updateFixture, status string, idxs ...int) []*structs.Allocation {
		var out []*structs.Allocation
		for _, i := range idxs {
			out = append(out, on(f.old, i, status, 6))
		}
		return out
	}
	tests := []struct {
		name    string
		job     *structs.Job
		allocs  []*structs.Allocation
		stops   []string // names stopped for the update
		place   []string
		inplace []string
	}{
		{
			name:   "max_parallel 1 replaces the lowest index",
			job:    env1.cur,
			allocs: olds(env1, "run/running", 0, 1, 2, 3),
			stops:  []string{"j.g[0]"},
			place:  []string{"j.g[0]"},
		},
		{
			name:   "max_parallel 2 replaces two",
			job:    env2.cur,
			allocs: olds(env2, "run/running", 0, 1, 2, 3),
			stops:  []string{"j.g[0]", "j.g[1]"},
			place:  []string{"j.g[0]", "j.g[1]"},
		},
		{
			name:   "max_parallel 0 replaces all",
			job:    unlimited.cur,
			allocs: olds(unlimited, "run/running", 0, 1, 2, 3),
			stops:  []string{"j.g[0]", "j.g[1]", "j.g[2]", "j.g[3]"},
			place:  []string{"j.g[0]", "j.g[1]", "j.g[2]", "j.g[3]"},
		},
		{
			name:   "pending replacement holds the next batch",
			job:    env1.cur,
			allocs: append(olds(env1, "run/running", 1, 2, 3), updatedFor(env1.old, 0), on(env1.cur, 0, "run/pending", 11)),
		},
		{
			name:   "running replacement lets the next batch go",
			job:    env1.cur,
			allocs: append(olds(env1, "run/running", 1, 2, 3), updatedFor(env1.old, 0), on(env1.cur, 0, "run/running", 11)),
			stops:  []string{"j.g[1]"},
			place:  []string{"j.g[1]"},
		},
		{
			name:   "failed replacement stays in flight and is placed again",
			job:    env1.cur,
			allocs: append(olds(env1, "run/running", 1, 2, 3), updatedFor(env1.old, 0), on(env1.cur, 0, "run/failed", 11)),
			place:  []string{"j.g[0]"},
		},
		{
			name:   "unplaced replacement stays in flight",
			job:    env1.cur,
			allocs: append(olds(env1, "run/running", 1, 2, 3), updatedFor(env1.old, 0)),
			place:  []string{"j.g[0]"},
		},
		{
			name:   "one of two in flight: one more goes",
			job:    env2.cur,
			allocs: append(olds(env2, "run/running", 2, 3), updatedFor(env2.old, 0), updatedFor(env2.old, 1), on(env2.cur, 0, "run/running", 11), on(env2.cur, 1, "run/pending", 11)),
			stops:  []string{"j.g[2]"},
			place:  []string{"j.g[2]"},
		},
		{
			// Version 7 changed the env; 10 only the count. web[0] was
			// replaced for 7 and its replacement still starts.
			name: "pending replacement of an earlier version stays in flight",
			job:  laterCount,
			allocs: append(olds(env1, "run/running", 1, 2, 3), func() *structs.Allocation {
				a := updatedFor(env1.old, 0)
				a.AllocModifyIndex = 8
				return a
			}(), on(mid, 0, "run/pending", 8)),
			place:   []string{"j.g[4]"},
			inplace: []string{"j.g[0]"},
		},
		{
			name: "stops of an earlier rollout are not in flight",
			job:  env1.cur,
			allocs: append(olds(env1, "run/running", 0, 1, 2, 3), func() *structs.Allocation {
				a := updatedFor(env1.old, 0)
				a.AllocModifyIndex = 4 // before version 10 was registered
				a.ID = "earlier"
				return a
			}()),
			stops: []string{"j.g[0]"},
			place: []string{"j.g[0]"},
		},
		{
			name:    "count-only change updates in place and places the new name",
			job:     countOnly.cur,
			allocs:  olds(countOnly, "run/running", 0, 1, 2, 3),
			place:   []string{"j.g[4]"},
			inplace: []string{"j.g[0]", "j.g[1]", "j.g[2]", "j.g[3]"},
		},
		{
			name:    "strategy-only change updates in place",
			job:     strategyOnly.cur,
			allocs:  olds(strategyOnly, "run/pending", 0, 1),
			inplace: []string{"j.g[0]", "j.g[1]"},
		},
		{
			name:   "scale up is not limited",
			job:    scaleAndEnv.cur,
			allocs: olds(scaleAndEnv, "run/running", 0, 1),
			stops:  []string{"j.g[0]"},
			place:  []string{"j.g[0]", "j.g[2]", "j.g[3]"},
		},
		{
			name: "batch ignores the update block",
			job:  batchCur,
			allocs: []*structs.Allocation{
				on(batchOld, 0, "run/running", 6), on(batchOld, 1, "run/running", 6), on(batchOld, 2, "run/running", 6),
			},
			stops: []string{"j.g[0]", "j.g[1]", "j.g[2]"},
			place: []string{"j.g[0]", "j.g[1]", "j.g[2]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reconcile(tt.job, tt.allocs, up, tt.job.Type == structs.JobTypeBatch, time.Time{})

			var stops, place, inplace []string
			for _, s := range r.stops {
				if s.desc != DescUpdated {
					t.Errorf("stop %s: got %q, want %q", s.alloc.Name, s.desc, DescUpdated)
				}
				stops = append(stops, s.alloc.Name)
			}
			for _, p := range r.place {
				place = append(place, p.name)
			}
			for _, a := range r.inplace {
				inplace = append(inplace, a.Name)
			}
			if !slices.Equal(stops, tt.stops) {
				t.Errorf("stops: got %v, want %v", stops, tt.stops)
			}
			if !slices.Equal(place, tt.place) {
				t.Errorf("place: got %v, want %v", place, tt.place)
			}
			if !slices.Equal(inplace, tt.inplace) {
				t.Errorf("in place: got %v, want %v", inplace, tt.inplace)
			}
		})
	}
}

func TestRollingUpdateWaiting(t *testing.T) {
	f := newUpdateFixture(2, 1, envChange)
	done := []*structs.Allocation{on(f.cur, 0, "run/running", 11), on(f.cur, 1, "run/running", 12)}
	batch := newUpdateFixture(2, 1, func(j *structs.Job) { envChange(j); j.Type = structs.JobTypeBatch })
	stopped := f.cur.Copy()
	stopped.Stop = true
	sameSpec := newUpdateFixture(2, 1, func(*structs.Job) {})
	tests := []struct {
		name   string
		job    *structs.Job
		allocs []*structs.Allocation
		want   bool
	}{
		{name: "old allocs left", job: f.cur, allocs: []*structs.Allocation{on(f.cur, 0, "run/running", 11), on(f.old, 1, "run/running", 6)}, want: true},
		{name: "all replaced", job: f.cur, allocs: done},
		{name: "old alloc finished", job: f.cur, allocs: []*structs.Allocation{on(f.old, 1, "run/failed", 6)}},
		{name: "unlimited", job: newUpdateFixture(2, 0, envChange).cur, allocs: []*structs.Allocation{on(f.old, 1, "run/running", 6)}},
		{name: "batch", job: batch.cur, allocs: []*structs.Allocation{on(batch.old, 1, "run/running", 6)}},
		{name: "job stopped", job: stopped, allocs: []*structs.Allocation{on(f.old, 1, "run/running", 6)}},
		{name: "in place only", job: sameSpec.cur, allocs: []*structs.Allocation{on(sameSpec.old, 1, "run/running", 6)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RollingUpdateWaiting(tt.job, tt.allocs); got != tt.want {
				t.Errorf("waiting: got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGroupSpecEqualIgnoresUpdateStrategy(t *testing.T) {
	base := reconcileJob(structs.JobTypeService, 1).TaskGroups[0]
	changed := base.Copy()
	changed.Update.MaxParallel = 7
	changed.Update.AutoRevert = true
	if !groupSpecEqual(base, changed) {
		t.Errorf("equal: got false, want true (the update strategy is not what allocations run)")
	}
}
