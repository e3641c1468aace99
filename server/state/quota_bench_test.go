package state

import (
	"fmt"
	"testing"

	"github.com/droverhq/drover/structs"
)

// BenchmarkUpsertGPUAllocs writes one plan of 8,000 single-GPU
// allocations on 1,000 nodes of 8 GPUs: the state side of a big job's
// commit, quota charges included.
func BenchmarkUpsertGPUAllocs(b *testing.B) {
	const nodes, gpus = 1000, 8
	job := testJob("big", structs.JobTypeBatch)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := NewStateStore()
		if err != nil {
			b.Fatal(err)
		}
		var allocs []*structs.Allocation
		for n := range nodes {
			node := gpuTestNode(fmt.Sprintf("n%d", n), gpus)
			if err := s.UpsertNode(uint64(n+1), node); err != nil {
				b.Fatal(err)
			}
			for g := range gpus {
				allocs = append(allocs, gpuAlloc(fmt.Sprintf("a-%d-%d", n, g), job, node.ID, 0, 0, node.NodeResources.Devices[0].Instances[g].ID))
			}
		}
		b.StartTimer()
		if err := s.UpsertAllocs(nodes+1, allocs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(nodes*gpus*b.N)/b.Elapsed().Seconds(), "allocs/s")
}
