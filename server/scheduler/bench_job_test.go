package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/droverhq/drover/server/scheduler/schedtest"
)

// BenchmarkProcessOneBigJob places one batch job of as many single-GPU
// allocations as the cluster has GPUs (5,000 nodes of 8), in one
// evaluation: the shape of Nomad's "2,000 allocations of one batch job"
// comparison, at 20 times the size. It reports placements per second of
// the whole Process (plan submission and commit to the state store
// included).
func BenchmarkProcessOneBigJob(b *testing.B) {
	const nodes = 5000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h := benchCluster(b, nodes)
		eval := h.RegisterJob(schedtest.GPUJob(fmt.Sprintf("big-%d", i), nodes*gpusPerBenchNode, 1))
		b.StartTimer()
		start := time.Now()
		if err := h.Process(eval); err != nil {
			b.Fatalf("process: %v", err)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		if n := len(h.LiveAllocs(ns, fmt.Sprintf("big-%d", i))); n != nodes*gpusPerBenchNode {
			b.Fatalf("placed %d, want %d", n, nodes*gpusPerBenchNode)
		}
		b.ReportMetric(float64(nodes*gpusPerBenchNode)/elapsed.Seconds(), "placements/s")
	}
}
