package scheduler_test

import (
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// TestHostVolumeFeasibility: a group's host volume places it only on the
// nodes offering the volume, writable when the group writes; the others
// are filtered with the reason.
func TestHostVolumeFeasibility(t *testing.T) {
	tests := []struct {
		name     string
		readOnly bool // the group's volume request
	}{
		{name: "write needs a writable volume", readOnly: false},
		{name: "read takes either", readOnly: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			none := schedtest.Node("none", 0, "", 0)
			ro := schedtest.Node("ro", 0, "", 0)
			ro.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/ro", ReadOnly: true}}
			rw := schedtest.Node("rw", 0, "", 0)
			rw.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/rw"}}
			for _, n := range []*structs.Node{none, ro, rw} {
				h.UpsertNode(n)
			}
			job := schedtest.ServiceJob("vol", 2)
			tg := job.TaskGroups[0]
			tg.Volumes = map[string]*structs.VolumeRequest{"v": {Name: "v", Type: structs.VolumeTypeHost, Source: "data", ReadOnly: tt.readOnly}}
			tg.Tasks[0].VolumeMounts = []*structs.VolumeMount{{Volume: "v", Destination: "/data"}}
			if err := job.Validate(); err != nil {
				t.Fatal(err)
			}

			process(t, h, h.RegisterJob(job))

			allocs := h.LiveAllocs(ns, "vol")
			for _, a := range allocs {
				if a.NodeID == none.ID || (!tt.readOnly && a.NodeID == ro.ID) {
					t.Errorf("alloc %s placed on a node without the volume %s", a.Name, a.NodeID)
				}
			}
			if len(allocs) != 2 {
				t.Fatalf("placed %d, want 2", len(allocs))
			}
		})
	}
}

// TestHostVolumeMissingEverywhere: no node offers the volume: nothing is
// placed and the failure names it.
func TestHostVolumeMissingEverywhere(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNode(schedtest.Node("a", 0, "", 0))
	ro := schedtest.Node("b", 0, "", 0)
	ro.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv", ReadOnly: true}}
	h.UpsertNode(ro)
	job := schedtest.ServiceJob("vol", 1)
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"v": {Name: "v", Type: structs.VolumeTypeHost, Source: "data"}}

	process(t, h, h.RegisterJob(job))

	if n := len(h.LiveAllocs(ns, "vol")); n != 0 {
		t.Fatalf("placed %d, want none", n)
	}
	m := lastUpdate(t, h).FailedTGAllocs[schedtest.ServiceTask]
	if m == nil || m.ConstraintFiltered["missing host volume data"] != 1 || m.ConstraintFiltered["host volume data is read-only"] != 1 || m.NodesFiltered != 2 {
		t.Errorf("metric: got %+v, want one node filtered per reason", m)
	}
}
