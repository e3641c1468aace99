package scheduler_test

import (
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
	"github.com/droverhq/drover/structs"
)

// TestDatacenterGlobs places jobs whose datacenters are globs, as in
// Nomad (2 nodes of 2 GPUs per datacenter, 12 asked): "dc*" reaches dc1 and dc2 but not eu1, and a job without
// datacenters (canonicalized to "*") reaches every node.
func TestDatacenterGlobs(t *testing.T) {
	tests := []struct {
		name        string
		datacenters []string
		want        map[string]int
	}{
		{"prefix glob", []string{"dc*"}, map[string]int{"dc1": 4, "dc2": 4}},
		{"default", nil, map[string]int{"dc1": 4, "dc2": 4, "eu1": 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			racks(h, map[string]int{"dc1-a": 2, "dc2-a": 2, "eu1-a": 2})
			job := schedtest.GPUJob("globbed", 12, 1)
			job.Datacenters = tt.datacenters
			job.Canonicalize()
			process(t, h, h.RegisterJob(job))
			got := countBy(h, "globbed", func(n *structs.Node) string { return n.Datacenter })
			if len(got) != len(tt.want) {
				t.Fatalf("allocations per datacenter: got %v, want %v", got, tt.want)
			}
			for dc, n := range tt.want {
				if got[dc] != n {
					t.Errorf("allocations in %s: got %d, want %d (all: %v)", dc, got[dc], n, got)
				}
			}
		})
	}
}
