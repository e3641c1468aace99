package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/droverhq/drover/server/scheduler/schedtest"
)

// gpusPerBenchNode is the GPUs of every benchmark node.
const gpusPerBenchNode = 8

// BenchmarkProcess places one 1-GPU job per iteration on clusters of
// 1,000, 5,000 and 10,000 nodes with 8 GPUs each. The cluster fills as it
// goes (8 jobs per node); when it is full a fresh one is built with the
// timer stopped, so every timed Process places its job.
func BenchmarkProcess(b *testing.B) {
	for _, nodes := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			benchmarkProcess(b, nodes)
		})
	}
}

func benchmarkProcess(b *testing.B, nodes int) {
	capacity := nodes * gpusPerBenchNode
	var h *schedtest.Harness
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if i%capacity == 0 {
			h = benchCluster(b, nodes)
		}
		eval := h.RegisterJob(schedtest.GPUJob(fmt.Sprintf("job-%d", i), 1, 1))
		b.StartTimer()
		if err := h.Process(eval); err != nil {
			b.Fatalf("process: %v", err)
		}
	}
	b.StopTimer()
	last := fmt.Sprintf("job-%d", b.N-1)
	if n := len(h.LiveAllocs(ns, last)); n != 1 {
		b.Fatalf("%s: got %d allocs, want 1", last, n)
	}
}

// benchCluster returns a harness with nodes empty nodes of
// gpusPerBenchNode H100s.
func benchCluster(b *testing.B, nodes int) *schedtest.Harness {
	h := schedtest.NewHarness(b)
	for i := range nodes {
		h.UpsertNode(schedtest.Node(fmt.Sprintf("gpu-%05d", i), gpusPerBenchNode, "", 80))
	}
	return h
}
